import { consumeIdentification } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { eventsOf, names } from './support/events.ts';
import { createChildVia, seedPartner } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';

let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;
let other: Awaited<ReturnType<typeof seedPartner>>;

beforeAll(async () => {
  env = await createTestEnv();
  partner = await seedPartner(env.deps, { quota: 1000, topup: 100 });
  other = await seedPartner(env.deps, { quota: 1000, topup: 100, name: 'Other' });
});
afterAll(() => env.close());

const transfer = (body: Json, key = partner.key) => call(env, 'partner-transfer-topup', { key, body });
const poolTopup = async (accountId: string) =>
  (await env.db<{ t: number }>`select topup_balance as t from pools where account_id = ${accountId}`)[0]?.t;

describe('partner-transfer-topup', () => {
  it('moves IDs atomically and reports both balances; child.topup_changed (gift) only for the credit', async () => {
    const c = await createChildVia(env, partner.key);
    const before = await poolTopup(partner.account_id);
    const res = await transfer({ child_api_key_id: c.child.api_key_id, amount: 7 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, partner_topup_balance: (before ?? 0) - 7, child_topup_balance: 7, transferred: 7 });
    expect(await poolTopup(partner.account_id)).toBe((before ?? 0) - 7);
    const events = await eventsOf(env.db, c.child.api_key_id);
    expect(names(events)).toEqual(['child.created', 'child.topup_changed']);
    expect(events[1]?.data).toEqual({
      child_api_key_id: c.child.api_key_id,
      previous_topup_balance: 0,
      topup_balance: 7,
      delta: 7,
      reason: 'gift',
    });
  });

  it('reactivates a quota-exhausted child (topup_changed + reactivated topup_purchased)', async () => {
    const c = await createChildVia(env, partner.key, { monthly_id_quota: 1 });
    expect((await consumeIdentification({ ctx: env.deps, input: { apiKeyId: c.child.api_key_id } })).outcome).toBe('consumed');
    const res = await transfer({ child_api_key_id: c.child.api_key_id, amount: 3 });
    expect(res.status).toBe(200);
    const events = await eventsOf(env.db, c.child.api_key_id);
    expect(names(events)).toEqual(['child.created', 'child.suspended', 'child.topup_changed', 'child.reactivated']);
    expect(events[3]?.data).toEqual({
      child_api_key_id: c.child.api_key_id,
      ids_used_this_period: 1,
      monthly_id_quota: 1,
      topup_balance: 3,
      reason: 'topup_purchased',
    });
    const [k] = await env.db<{ status: string }>`select status from api_keys where id = ${c.child.api_key_id}`;
    expect(k?.status).toBe('active');
  });

  it('does not reactivate a child the partner suspended by hand', async () => {
    const c = await createChildVia(env, partner.key, { monthly_id_quota: 5 });
    await call(env, 'partner-update-child', { key: partner.key, body: { child_api_key_id: c.child.api_key_id, status: 'suspended' } });
    await transfer({ child_api_key_id: c.child.api_key_id, amount: 1 });
    const [k] = await env.db<{ status: string }>`select status from api_keys where id = ${c.child.api_key_id}`;
    expect(k?.status).toBe('suspended');
    expect(names(await eventsOf(env.db, c.child.api_key_id))).not.toContain('child.reactivated');
  });

  it('402 when the partner balance is below the amount, with both figures, and nothing moves', async () => {
    const c = await createChildVia(env, partner.key);
    const balance = (await poolTopup(partner.account_id)) ?? 0;
    const before = await snapshot(env.db);
    const res = await transfer({ child_api_key_id: c.child.api_key_id, amount: balance + 1 });
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ success: false, code: 'insufficient_topup', partner_topup_balance: balance, requested_amount: balance + 1 });
    expect(await snapshot(env.db)).toEqual(before);
  });

  it.each([
    ['child_api_key_id missing', { amount: 1 }, /child_api_key_id is required/],
    ['child_api_key_id not a uuid', { child_api_key_id: 'x', amount: 1 }, /uuid/],
    ['amount missing', { child_api_key_id: '00000000-0000-4000-8000-000000000000' }, /amount is required/],
    ['amount zero', { child_api_key_id: '00000000-0000-4000-8000-000000000000', amount: 0 }, /positive integer/],
    ['amount negative', { child_api_key_id: '00000000-0000-4000-8000-000000000000', amount: -4 }, /positive integer/],
    ['amount fractional', { child_api_key_id: '00000000-0000-4000-8000-000000000000', amount: 1.5 }, /positive integer/],
    ['amount a string', { child_api_key_id: '00000000-0000-4000-8000-000000000000', amount: '5' }, /positive integer/],
  ])('400 when %s', async (_l, body, message) => {
    const res = await transfer(body);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
  });

  it('403 for another partner’s child; 404 for a missing child or a missing subscription row', async () => {
    const theirs = await createChildVia(env, other.key);
    expect((await transfer({ child_api_key_id: theirs.child.api_key_id, amount: 1 })).status).toBe(403);
    expect((await transfer({ child_api_key_id: '00000000-0000-4000-8000-000000000777', amount: 1 })).status).toBe(404);
    const c = await createChildVia(env, partner.key);
    await env.db`delete from child_subscriptions where api_key_id = ${c.child.api_key_id}`;
    const res = await transfer({ child_api_key_id: c.child.api_key_id, amount: 1 });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatch(/no subscription/);
  });

  it('404 when the partner has no pool subscription row', async () => {
    const p = await seedPartner(env.deps, { quota: 10 });
    const c = await createChildVia(env, p.key);
    await env.db`delete from pools where account_id = ${p.account_id}`;
    const res = await transfer({ child_api_key_id: c.child.api_key_id, amount: 1 }, p.key);
    expect(res.status).toBe(404);
    expect(res.body.error).toMatch(/no pool subscription/);
  });
});
