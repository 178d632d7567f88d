import { getPoolState, type PartnerCaller } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { countingStatements } from './support/counting-db.ts';
import { seedPartner } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(() => env.close());

const poolState = (key: string) => call(env, 'partner-pool-state', { key });

describe('partner-pool-state', () => {
  it('reports pool, auto_reload and recent_topups with every documented field', async () => {
    const p = await seedPartner(env.deps, { quota: 500, topup: 40, perIdPence: 1.25, card: 'pm_card_visa' });
    await env.db`update pools set ids_used_this_period = 120, auto_reload_enabled = true, auto_reload_threshold_ids = 50,
                   auto_reload_topup_amount_ids = 1000, consecutive_declines = 2, last_declined_at = now()
                 where account_id = ${p.account_id}`;
    const res = await poolState(p.key);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['auto_reload', 'pool', 'recent_topups', 'success']);
    const pool = res.body.pool as Json;
    expect(pool).toMatchObject({
      monthly_id_quota: 500,
      ids_used_this_period: 120,
      topup_balance: 40,
      available: 420,
      pool_billing_mode: 'prepaid',
      partner_per_id_pence: 1.25,
    });
    expect(Date.parse(pool.current_period_end as string) - Date.parse(pool.current_period_start as string)).toBe(30 * 86400_000);
    const auto = res.body.auto_reload as Json;
    expect(auto).toMatchObject({
      enabled: true,
      threshold_ids: 50,
      topup_amount_ids: 1000,
      payment_method_id: 'pm_card_visa',
      consecutive_declines: 2,
    });
    expect(Number.isNaN(Date.parse(auto.last_declined_at as string))).toBe(false);
    expect(res.body.recent_topups).toEqual([{ amount_ids: 40, created_at: expect.any(String) as unknown, status: 'completed' }]);
  });

  it('computes available as max(0, quota − used) + topup, never negative (invoice overage)', async () => {
    const p = await seedPartner(env.deps, { billing: 'invoice_monthly', quota: 10, topup: 3, card: 'pm_x', perIdPence: 2 });
    await env.db`update pools set ids_used_this_period = 25 where account_id = ${p.account_id}`;
    const pool = (await poolState(p.key)).body.pool as Json;
    expect(pool).toMatchObject({ ids_used_this_period: 25, available: 3, pool_billing_mode: 'invoice_monthly' });
  });

  it('reports nulls before anything is configured, and an empty recent_topups before the first top-up', async () => {
    const p = await seedPartner(env.deps, { quota: 0 });
    await env.db`update pools set current_period_start = null, current_period_end = null where account_id = ${p.account_id}`;
    const res = await poolState(p.key);
    expect(res.body.pool).toMatchObject({ current_period_start: null, current_period_end: null, partner_per_id_pence: null, available: 0 });
    expect(res.body.auto_reload).toEqual({
      enabled: false,
      threshold_ids: null,
      topup_amount_ids: null,
      payment_method_id: null,
      last_declined_at: null,
      consecutive_declines: 0,
    });
    expect(res.body.recent_topups).toEqual([]);
  });

  it('lists the last 10 completed top-ups newest first, leaving out pending, failed and child top-ups', async () => {
    const p = await seedPartner(env.deps, { quota: 0 });
    await env.db`
      insert into topups (pool_id, amount_ids, status, source, created_at)
      select id, g, 'completed', 'operator', now() - make_interval(mins => 100 - g)
      from pools, generate_series(1, 12) g where account_id = ${p.account_id}`;
    await env.db`
      insert into topups (pool_id, amount_ids, status, source, created_at)
      select id, 999, s, 'auto_reload', now() from pools, unnest(array['pending', 'failed']) s
      where account_id = ${p.account_id}`;
    const topups = (await poolState(p.key)).body.recent_topups as Json[];
    expect(topups.map((t) => t.amount_ids)).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3]);
    expect(topups.every((t) => t.status === 'completed')).toBe(true);
    const times = topups.map((t) => Date.parse(t.created_at as string));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('shows a top-up time in UTC to the millisecond, truncated like every other timestamp', async () => {
    const p = await seedPartner(env.deps, { quota: 0 });
    await env.db`
      insert into topups (pool_id, amount_ids, status, source, created_at)
      select id, 7, 'refunded', 'operator', '2024-03-05T06:07:08.123999Z' from pools where account_id = ${p.account_id}`;
    expect((await poolState(p.key)).body.recent_topups).toEqual([{ amount_ids: 7, created_at: '2024-03-05T06:07:08.123Z', status: 'refunded' }]);
  });

  it('403 when the partner has no pool subscription', async () => {
    const p = await seedPartner(env.deps);
    await env.db`delete from pools where account_id = ${p.account_id}`;
    const res = await poolState(p.key);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ success: false, error: 'this partner has no pool subscription', code: 'forbidden' });
  });

  it('is read-only: a hundred reads change nothing', async () => {
    const p = await seedPartner(env.deps, { quota: 5, topup: 5 });
    const before = await snapshot(env.db);
    for (let i = 0; i < 100; i++) expect((await poolState(p.key)).status).toBe(200);
    expect(await snapshot(env.db)).toEqual(before);
  });

  it('still answers when the pool has no IDs left (exempt from the out-of-IDs 402)', async () => {
    const p = await seedPartner(env.deps, { quota: 2, topup: 0 });
    await env.db`update pools set ids_used_this_period = 2 where account_id = ${p.account_id}`;
    const res = await poolState(p.key);
    expect(res.status).toBe(200);
    expect((res.body.pool as Json).available).toBe(0);
  });

  it('reads that arrive together, for several partners, share one statement and each get their own pool', async () => {
    const partners = await Promise.all([3, 5, 7, 11].map((quota) => seedPartner(env.deps, { quota, topup: quota * 2 })));
    const { ctx, seen } = countingStatements(env.deps, ['from pools p']);
    const asked = partners.flatMap((p) => [p, p, p]);
    const callerOf = (p: (typeof partners)[number]): PartnerCaller => ({
      kind: 'partner',
      apiKeyId: p.api_key_id,
      accountId: p.account_id,
      status: 'active',
      isPartner: true,
      isPartnerMaster: true,
      parentApiKeyId: null,
    });
    const states = await Promise.all(asked.map((p) => getPoolState({ ctx: { ...ctx, caller: callerOf(p) }, input: {} })));
    expect(seen['from pools p']).toBe(1);
    expect(states.map((s) => [s.pool.monthly_id_quota, s.pool.topup_balance])).toEqual(
      asked.map((_, i) => {
        const quota = [3, 5, 7, 11][Math.floor(i / 3)] as number;
        return [quota, quota * 2];
      }),
    );
  });

  it('a partner without a pool is refused while the others of its batch are answered', async () => {
    const [kept, gone] = [await seedPartner(env.deps, { quota: 9 }), await seedPartner(env.deps, { quota: 4 })];
    await env.db`delete from pools where account_id = ${gone.account_id}`;
    const [a, b] = await Promise.all([poolState(kept.key), poolState(gone.key)]);
    expect(a.status).toBe(200);
    expect((a.body.pool as Json).monthly_id_quota).toBe(9);
    expect(b.status).toBe(403);
  });

  it('a read sent after a change was answered shows the change, under a stream of reads', async () => {
    const p = await seedPartner(env.deps, { quota: 50 });
    let stop = false;
    const stream = (async () => {
      while (!stop) expect((await poolState(p.key)).status).toBe(200);
    })();
    for (let used = 1; used <= 20; used++) {
      await env.db`update pools set ids_used_this_period = ${used} where account_id = ${p.account_id}`;
      expect(((await poolState(p.key)).body.pool as Json).ids_used_this_period).toBe(used);
    }
    stop = true;
    await stream;
  });
});
