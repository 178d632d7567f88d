import { consumeIdentification } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { eventsOf, names } from './support/events.ts';
import { startReceiver } from './support/receiver.ts';
import { createChildVia, seedPartner } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';

let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;
let other: Awaited<ReturnType<typeof seedPartner>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  env = await createTestEnv();
  partner = await seedPartner(env.deps, { quota: 10_000 });
  other = await seedPartner(env.deps, { quota: 100, name: 'Other' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await env.close();
});

const update = (body: Json, key = partner.key) => call(env, 'partner-update-child', { key, body });
const consume = (apiKeyId: string) => consumeIdentification({ ctx: env.deps, input: { apiKeyId } });

async function exhaust(apiKeyId: string, n: number) {
  for (let i = 0; i < n; i++) await consume(apiKeyId);
}

describe('partner-update-child', () => {
  it('answers 200 with the documented body; omitted fields are untouched', async () => {
    const c = await createChildVia(env, partner.key, { name: 'Before', monthly_id_quota: 5 });
    const res = await update({ child_api_key_id: c.child.api_key_id, name: 'After' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['child', 'subscription', 'success']);
    expect(res.body.child).toEqual({
      id: c.child.api_key_id,
      user_id: c.child.child_user_id,
      name: 'After',
      status: 'active',
      created_at: expect.any(String) as unknown,
      webhook_url: null,
      parent_api_key_id: partner.api_key_id,
    });
    expect(res.body.subscription).toEqual({
      id: c.subscription.id,
      kind: 'trial_child',
      monthly_id_quota: 5,
      ids_used_this_period: 0,
      topup_balance: 0,
      current_period_end: c.subscription.current_period_end,
      status: 'active',
    });
  });

  it('applies a quota increase now and emits child.updated whose delta holds only what changed', async () => {
    const c = await createChildVia(env, partner.key, { name: 'Grow', monthly_id_quota: 5 });
    const res = await update({ child_api_key_id: c.child.api_key_id, monthly_id_quota: 8, name: 'Grow' });
    expect((res.body.subscription as Json).monthly_id_quota).toBe(8);
    const updated = (await eventsOf(env.db, c.child.api_key_id)).filter((e) => e.event === 'child.updated');
    expect(updated).toHaveLength(1);
    expect(updated[0]?.data).toEqual({
      child_api_key_id: c.child.api_key_id,
      delta: { monthly_id_quota: 8 },
      name: 'Grow',
      status: 'active',
      monthly_id_quota: 8,
      ids_used_this_period: 0,
      topup_balance: 0,
      current_period_end: c.subscription.current_period_end,
      sub_status: 'active',
    });
  });

  it('queues a quota decrease for the next period, keeps usage, and leaves it out of delta', async () => {
    const c = await createChildVia(env, partner.key, { name: 'Shrink', monthly_id_quota: 10 });
    await exhaust(c.child.api_key_id, 4);
    const res = await update({ child_api_key_id: c.child.api_key_id, monthly_id_quota: 3 });
    expect(res.body.subscription).toMatchObject({ monthly_id_quota: 10, ids_used_this_period: 4 });
    const [row] = await env.db<{ pending_monthly_id_quota: number }>`
      select pending_monthly_id_quota from child_subscriptions where api_key_id = ${c.child.api_key_id}`;
    expect(row?.pending_monthly_id_quota).toBe(3);
    expect(names(await eventsOf(env.db, c.child.api_key_id))).not.toContain('child.updated');
    // An increase afterwards applies at once and cancels the queued decrease.
    await update({ child_api_key_id: c.child.api_key_id, monthly_id_quota: 12 });
    const [after] = await env.db<{ monthly_id_quota: number; pending_monthly_id_quota: number | null }>`
      select monthly_id_quota, pending_monthly_id_quota from child_subscriptions where api_key_id = ${c.child.api_key_id}`;
    expect(after).toEqual({ monthly_id_quota: 12, pending_monthly_id_quota: null });
  });

  it('reactivates a quota-exhausted child when a quota increase makes room (child.updated then child.reactivated)', async () => {
    const c = await createChildVia(env, partner.key, { name: 'Revive', monthly_id_quota: 2 });
    await exhaust(c.child.api_key_id, 2);
    const [k] = await env.db<{ status: string }>`select status from api_keys where id = ${c.child.api_key_id}`;
    expect(k?.status).toBe('suspended');
    const res = await update({ child_api_key_id: c.child.api_key_id, monthly_id_quota: 5 });
    expect((res.body.child as Json).status).toBe('active');
    const events = await eventsOf(env.db, c.child.api_key_id);
    expect(names(events).slice(-2)).toEqual(['child.updated', 'child.reactivated']);
    expect(events.at(-2)?.data.delta).toEqual({ monthly_id_quota: 5, status: 'active' });
    expect(events.at(-1)?.data).toEqual({
      child_api_key_id: c.child.api_key_id,
      ids_used_this_period: 2,
      monthly_id_quota: 5,
      topup_balance: 0,
      reason: 'quota_increased',
    });
  });

  it('sets status to any allowed value and emits only child.updated with status in delta', async () => {
    const c = await createChildVia(env, partner.key, { name: 'Manual', monthly_id_quota: 2 });
    for (const status of ['suspended', 'revoked', 'active'] as const) {
      const res = await update({ child_api_key_id: c.child.api_key_id, status });
      expect((res.body.child as Json).status).toBe(status);
    }
    const events = (await eventsOf(env.db, c.child.api_key_id)).filter((e) => e.event !== 'child.created');
    expect(names(events)).toEqual(['child.updated', 'child.updated', 'child.updated']);
    expect(events.map((e) => e.data.delta)).toEqual([{ status: 'suspended' }, { status: 'revoked' }, { status: 'active' }]);
  });

  it('revoking a child makes its key answer 401', async () => {
    const c = await createChildVia(env, partner.key, { name: 'Revoked' });
    await update({ child_api_key_id: c.child.api_key_id, status: 'revoked' });
    const res = await call(env, 'partner-pool-state', { key: c.child.key });
    expect(res.status).toBe(401);
  });

  it('extends the period to max(current_period_end, now) + days', async () => {
    const c = await createChildVia(env, partner.key, { name: 'Extend' });
    const res = await update({ child_api_key_id: c.child.api_key_id, extend_period_days: 10 });
    const end = Date.parse((res.body.subscription as Json).current_period_end as string);
    expect(end - Date.parse(c.subscription.current_period_end)).toBe(10 * 86400_000);
    // A lapsed period extends from now, not from the past end.
    await env.db`update child_subscriptions set current_period_end = now() - interval '90 days', current_period_start = now() - interval '120 days'
                 where api_key_id = ${c.child.api_key_id}`;
    const before = Date.now();
    const again = await update({ child_api_key_id: c.child.api_key_id, extend_period_days: 1 });
    const end2 = Date.parse((again.body.subscription as Json).current_period_end as string);
    expect(end2).toBeGreaterThanOrEqual(before + 86400_000 - 1000);
    expect(end2).toBeLessThanOrEqual(Date.now() + 86400_000 + 1000);
    const delta = (await eventsOf(env.db, c.child.api_key_id)).at(-1)?.data.delta as Json;
    expect(Object.keys(delta)).toEqual(['current_period_end']);
  });

  describe('webhook', () => {
    it('setting a URL mints a secret when none existed and returns it (webhook field present)', async () => {
      const c = await createChildVia(env, partner.key, { name: 'Hook' });
      const res = await update({ child_api_key_id: c.child.api_key_id, webhook_url: receiver.url });
      expect(res.status).toBe(200);
      const webhook = res.body.webhook as { url: string; secret: string };
      expect(webhook.url).toBe(receiver.url);
      expect(webhook.secret).toMatch(/^whsec_/);
      expect((res.body.child as Json).webhook_url).toBe(receiver.url);
      expect((await eventsOf(env.db, c.child.api_key_id)).at(-1)?.data.delta).toEqual({ has_webhook: true });
    });

    it('changing the URL keeps the existing secret and omits the webhook field', async () => {
      const c = await createChildVia(env, partner.key, { name: 'Keep', webhook_url: receiver.url, webhook_secret: 'original-secret' });
      const res = await update({ child_api_key_id: c.child.api_key_id, webhook_url: `${receiver.url}/v2` });
      expect(res.body.webhook).toBeUndefined();
      const [row] = await env.db<{ webhook_secret_sealed: string }>`select webhook_secret_sealed from api_keys where id = ${c.child.api_key_id}`;
      expect(await env.deps.keyring.open(row?.webhook_secret_sealed ?? '')).toBe('original-secret');
    });

    it('an explicit webhook_secret string replaces the secret without echoing it', async () => {
      const c = await createChildVia(env, partner.key, { name: 'Replace', webhook_url: receiver.url });
      const res = await update({ child_api_key_id: c.child.api_key_id, webhook_secret: 'brand-new-secret' });
      expect(res.body.webhook).toBeUndefined();
      const [row] = await env.db<{ webhook_secret_sealed: string }>`select webhook_secret_sealed from api_keys where id = ${c.child.api_key_id}`;
      expect(await env.deps.keyring.open(row?.webhook_secret_sealed ?? '')).toBe('brand-new-secret');
    });

    it('webhook_secret null mints a fresh secret and returns it', async () => {
      const c = await createChildVia(env, partner.key, { name: 'Remint', webhook_url: receiver.url, webhook_secret: 'old-secret-1' });
      const res = await update({ child_api_key_id: c.child.api_key_id, webhook_secret: null });
      const webhook = res.body.webhook as { secret: string };
      expect(webhook.secret).toMatch(/^whsec_/);
      expect(webhook.secret).not.toBe('old-secret-1');
    });

    it('webhook_url null clears URL and secret (has_webhook false in delta); tracking is unaffected', async () => {
      const c = await createChildVia(env, partner.key, { name: 'Clear', webhook_url: receiver.url, monthly_id_quota: 3 });
      const res = await update({ child_api_key_id: c.child.api_key_id, webhook_url: null });
      expect((res.body.child as Json).webhook_url).toBeNull();
      const [row] = await env.db<{ webhook_url: string | null; webhook_secret_sealed: string | null; status: string }>`
        select webhook_url, webhook_secret_sealed, status from api_keys where id = ${c.child.api_key_id}`;
      expect(row).toEqual({ webhook_url: null, webhook_secret_sealed: null, status: 'active' });
      expect((await eventsOf(env.db, c.child.api_key_id)).at(-1)?.data.delta).toEqual({ has_webhook: false });
      expect((await consume(c.child.api_key_id)).outcome).toBe('consumed');
    });

    it('400 for a webhook_secret with no URL to attach it to, or while clearing the URL', async () => {
      const c = await createChildVia(env, partner.key, { name: 'NoUrl' });
      expect((await update({ child_api_key_id: c.child.api_key_id, webhook_secret: 'some-secret' })).status).toBe(400);
      const res = await update({ child_api_key_id: c.child.api_key_id, webhook_url: null, webhook_secret: 'some-secret' });
      expect(res.status).toBe(400);
    });
  });

  describe('errors change nothing', () => {
    it.each([
      ['child_api_key_id missing', { child_api_key_id: undefined, name: 'x' }, /child_api_key_id is required/],
      ['child_api_key_id not a uuid', { child_api_key_id: 'nope' }, /child_api_key_id.*uuid/],
      ['status outside the allowed set', { status: 'paused' }, /status.*active, suspended or revoked/],
      ['quota negative', { monthly_id_quota: -3 }, /monthly_id_quota/],
      ['extend_period_days zero', { extend_period_days: 0 }, /extend_period_days/],
      ['webhook_url invalid', { webhook_url: 'nope' }, /webhook_url is not a valid URL/],
      ['webhook_url to a private address', { webhook_url: 'http://169.254.169.254/' }, /not allowed/],
      ['webhook_secret shorter than 8', { webhook_secret: 'short' }, /webhook_secret.*8/],
      ['webhook_url a number', { webhook_url: 42 }, /webhook_url/],
    ])('400 when %s', async (_l, patch, message) => {
      const c = await createChildVia(env, partner.key, { name: 'Err' });
      const before = await snapshot(env.db);
      const res = await update({ child_api_key_id: c.child.api_key_id, ...patch });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(message);
      expect(await snapshot(env.db)).toEqual(before);
    });

    it('404 for an unknown key and for a direct (unmanaged) key', async () => {
      expect((await update({ child_api_key_id: '00000000-0000-4000-8000-000000000001', name: 'x' })).status).toBe(404);
      expect((await update({ child_api_key_id: partner.api_key_id, name: 'x' })).status).toBe(404);
    });

    it('403 for another partner’s child, which stays untouched', async () => {
      const c = await createChildVia(env, other.key, { name: 'Theirs' });
      const before = await snapshot(env.db);
      const res = await update({ child_api_key_id: c.child.api_key_id, name: 'Mine now' });
      expect(res.status).toBe(403);
      expect(await snapshot(env.db)).toEqual(before);
    });
  });
});
