import { authenticateKey } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { eventsOf } from './support/events.ts';
import { startReceiver } from './support/receiver.ts';
import { createChildVia, seedDirectAccount, seedDirectKey, seedPartner } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';

let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  env = await createTestEnv();
  partner = await seedPartner(env.deps, { quota: 1000 });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await env.close();
});

const adopt = (body: Json, key = partner.key) => call(env, 'partner-adopt-existing-key', { key, body });

describe('partner-adopt-existing-key', () => {
  it('converts the partner’s own direct tracker into a managed child without rotating its key', async () => {
    const own = await seedDirectKey(env.deps, partner.account_id);
    const res = await adopt({ api_key_id: own.api_key_id, name: 'Adopted', monthly_id_quota: 40 });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['child', 'subscription', 'success', 'webhook', 'website']);
    const child = res.body.child as Json;
    expect(child).toMatchObject({ api_key_id: own.api_key_id, name: 'Adopted', status: 'active' });
    expect(child.child_user_id).not.toBe(partner.account_id);
    expect(res.body.website).toEqual({ id: own.website_id, tracking_script_id: own.tracking_script_id, domain: expect.any(String) as unknown });
    expect(res.body.subscription).toMatchObject({ monthly_id_quota: 40, status: 'active' });
    expect(res.body.webhook).toBeNull();
    expect(res.body).not.toHaveProperty('child.key');

    // Same key, now a child of the master, owned by a phantom user.
    const caller = await authenticateKey({ ctx: env.deps, input: { key: own.key } });
    expect(caller).toMatchObject({ apiKeyId: own.api_key_id, parentApiKeyId: partner.api_key_id, accountId: child.child_user_id });
    const listed = await call(env, 'partner-list-children', { key: partner.key, query: { child_api_key_id: own.api_key_id } });
    expect((listed.body.children as Json[])[0]).toMatchObject({ name: 'Adopted', monthly_id_quota: 40, domain: (res.body.website as Json).domain });

    const [event] = (await eventsOf(env.db, own.api_key_id)).filter((e) => e.event === 'child.adopted');
    expect(event?.data).toEqual({
      child_api_key_id: own.api_key_id,
      child_user_id: child.child_user_id,
      name: 'Adopted',
      domain: (res.body.website as Json).domain,
      tracking_script_id: own.tracking_script_id,
      monthly_id_quota: 40,
      current_period_end: (res.body.subscription as Json).current_period_end,
      sub_status: 'active',
      has_webhook: false,
    });
  });

  it('sets a webhook (minting the secret) and defaults monthly_id_quota to 0', async () => {
    const own = await seedDirectKey(env.deps, partner.account_id);
    const res = await adopt({ api_key_id: own.api_key_id, name: 'Hooked', webhook_url: receiver.url });
    expect(res.status).toBe(200);
    expect((res.body.subscription as Json).monthly_id_quota).toBe(0);
    const webhook = res.body.webhook as { url: string; secret: string };
    expect(webhook.url).toBe(receiver.url);
    expect(webhook.secret).toMatch(/^whsec_/);
  });

  describe('preconditions', () => {
    it('409 when the key is the authenticating master key', async () => {
      const res = await adopt({ api_key_id: partner.api_key_id, name: 'Self' });
      expect(res.status).toBe(409);
    });

    it('409 when the key already has a parent', async () => {
      const c = await createChildVia(env, partner.key);
      const res = await adopt({ api_key_id: c.child.api_key_id, name: 'Again' });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatch(/already a managed child/);
    });

    it('409 when the key is not active', async () => {
      const own = await seedDirectKey(env.deps, partner.account_id);
      await env.db`update api_keys set status = 'suspended', suspended_reason = 'manual' where id = ${own.api_key_id}`;
      const res = await adopt({ api_key_id: own.api_key_id, name: 'Inactive' });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatch(/not active/);
    });

    it('409 when the key has no active website', async () => {
      const own = await seedDirectKey(env.deps, partner.account_id);
      await env.db`update websites set status = 'inactive' where api_key_id = ${own.api_key_id}`;
      const res = await adopt({ api_key_id: own.api_key_id, name: 'Siteless' });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatch(/no active website/);
    });

    it('403 when the key belongs to a different user; 404 when there is no such key', async () => {
      const stranger = await seedDirectAccount(env.deps);
      const before = await snapshot(env.db);
      expect((await adopt({ api_key_id: stranger.api_key_id, name: 'Theft' })).status).toBe(403);
      expect((await adopt({ api_key_id: '00000000-0000-4000-8000-00000000abcd', name: 'Ghost' })).status).toBe(404);
      expect(await snapshot(env.db)).toEqual(before);
    });

    it.each([
      ['api_key_id missing', { name: 'x' }, /api_key_id is required/],
      ['api_key_id not a uuid', { api_key_id: '123', name: 'x' }, /api_key_id.*uuid/],
      ['name missing', { api_key_id: '00000000-0000-4000-8000-000000000000' }, /name is required/],
      ['webhook_url invalid', { api_key_id: '00000000-0000-4000-8000-000000000000', name: 'x', webhook_url: 'nope' }, /webhook_url/],
    ])('400 when %s', async (_l, body, message) => {
      const res = await adopt(body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(message);
    });
  });
});
