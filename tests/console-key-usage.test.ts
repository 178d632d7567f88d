import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { seedDirectAccount, seedPartnerWithChild } from './support/seed.ts';

/**
 * key-usage: the IDs a key's identifications draw on, read by the key itself (the console's site
 * view shows a child's customer its quota without the partner's key).
 */
let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(async () => {
  await env?.close();
});

describe('key-usage', () => {
  it('a managed child’s key reads its own subscription, a queued decrease beside the quota in force', async () => {
    const { partner, created } = await seedPartnerWithChild(env, { quota: 500, topup: 100 }, { monthly_id_quota: 40 });
    await env.db`update child_subscriptions set ids_used_this_period = 15, topup_balance = 7 where api_key_id = ${created.child.api_key_id}`;
    const lowered = await call(env, 'partner-update-child', {
      key: partner.key,
      body: { child_api_key_id: created.child.api_key_id, monthly_id_quota: 20 },
    });
    expect(lowered.status).toBe(200);
    const res = await call(env, 'key-usage', { key: created.child.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      metered_by: 'child_subscription',
      monthly_id_quota: 40,
      pending_monthly_id_quota: 20,
      ids_used_this_period: 15,
      topup_balance: 7,
      available: 32,
      current_period_end: created.subscription.current_period_end,
    });
  });

  it('a partner’s master key reads the pool; a suspended key still reads', async () => {
    const { partner } = await seedPartnerWithChild(env, { quota: 300, topup: 25 });
    await env.db`update api_keys set status = 'suspended', suspended_reason = 'manual' where id = ${partner.api_key_id}`;
    await env.authSync();
    const res = await call(env, 'key-usage', { key: partner.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ metered_by: 'partner_pool', monthly_id_quota: 300, ids_used_this_period: 0, topup_balance: 25, available: 325 });
  });

  it('a key not metered in IDs says so, every number null; no key is a 401', async () => {
    const direct = await seedDirectAccount(env.deps);
    const res = await call(env, 'key-usage', { key: direct.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      metered_by: 'none',
      monthly_id_quota: null,
      pending_monthly_id_quota: null,
      ids_used_this_period: null,
      topup_balance: null,
      available: null,
      current_period_end: null,
    });
    expect((await call(env, 'key-usage')).status).toBe(401);
  });
});
