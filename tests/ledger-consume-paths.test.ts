/**
 * Every way one identification can end (sl_consume_id), each proved on its balances, its ledger row
 * and its events. The consumption path takes the common cases (the child's quota, the child's top-up)
 * without a separate lock statement and refuses without any lock; these tests pin down that the
 * outcomes are still exactly 0002's, including the rarer paths that hand over to the locked one
 * (a key suspended by the partner, an empty pool, overage, direct trackers).
 */

import { type ConsumeResult, consumeIdentification } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { eventsOf, names } from './support/events.ts';
import { createChildVia, seedDirectAccount, seedDirectKey, seedPartner, seedPartnerWithChild } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv({ pool: 20 });
});
afterAll(() => env.close());

const consume = (apiKeyId: string): Promise<ConsumeResult> => consumeIdentification({ ctx: env.deps, input: { apiKeyId } });

/** The SQL function's own row: `emitted` is what tells the verb to dispatch webhooks. */
async function consumeRow(apiKeyId: string) {
  const [row] = await env.db<ConsumeResult & { reload_pool_id: string | null; emitted: boolean }>`
    select outcome, child_source, pool_source, reload_pool_id, emitted from sl_consume_id(${apiKeyId})`;
  if (!row) throw new Error('sl_consume_id returned no row');
  return row;
}

interface State {
  status: string;
  used: number;
  quota: number;
  topup: number;
  pool_used: number;
  pool_topup: number;
  pool_overage: number;
}

async function stateOf(childId: string): Promise<State> {
  const [row] = await env.db<State>`
    select k.status, s.ids_used_this_period as used, s.monthly_id_quota as quota, s.topup_balance as topup,
           p.ids_used_this_period as pool_used, p.topup_balance as pool_topup, p.overage_ids_this_period as pool_overage
    from api_keys k join child_subscriptions s on s.api_key_id = k.id
    join api_keys m on m.id = k.parent_api_key_id join pools p on p.account_id = m.account_id
    where k.id = ${childId}`;
  if (!row) throw new Error(`no child ${childId}`);
  return row;
}

const ledgerOf = (key: string) =>
  env.db<{ pool_id: string | null; child_source: string | null; pool_source: string | null }>`
    select pool_id, child_source, pool_source from id_ledger where child_api_key_id = ${key} order by id`;

/** A child on its partner's pool (support/seed.ts), and the pool's id. */
async function childOnPool(opts: { poolQuota?: number; poolTopup?: number; invoice?: boolean; quota: number }) {
  const { partner: p, created: c } = await seedPartnerWithChild(
    env,
    {
      quota: opts.poolQuota ?? 1000,
      topup: opts.poolTopup ?? 0,
      ...(opts.invoice ? { billing: 'invoice_monthly' as const, perIdPence: 2, card: 'pm_card_visa' } : {}),
    },
    { monthly_id_quota: opts.quota },
  );
  const [pool] = await env.db<{ id: string }>`select id from pools where account_id = ${p.account_id}`;
  return { p, id: c.child.api_key_id, poolId: pool?.id ?? '' };
}

/** Leaves a prepaid pool with nothing available (a partner endpoint would then answer 402). */
const emptyPool = (poolId: string) => env.db`update pools set monthly_id_quota = ids_used_this_period, topup_balance = 0 where id = ${poolId}`;

const gift = async (partnerKey: string, child: string, amount: number) => {
  const res = await call(env, 'partner-transfer-topup', { key: partnerKey, body: { child_api_key_id: child, amount } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
};

describe('consumption: which source funds the ID', () => {
  it('the child quota draws on the pool quota, then on the pool top-up once the pool quota is used', async () => {
    const { id, poolId } = await childOnPool({ poolQuota: 2, poolTopup: 3, quota: 10 });
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await consume(id));
    expect(results.map((r) => [r.outcome, r.child_source, r.pool_source])).toEqual([
      ['consumed', 'quota', 'quota'],
      ['consumed', 'quota', 'quota'],
      ['consumed', 'quota', 'topup'],
      ['consumed', 'quota', 'topup'],
    ]);
    expect(await stateOf(id)).toMatchObject({ status: 'active', used: 4, pool_used: 2, pool_topup: 1 });
    expect(await ledgerOf(id)).toEqual([
      { pool_id: poolId, child_source: 'quota', pool_source: 'quota' },
      { pool_id: poolId, child_source: 'quota', pool_source: 'quota' },
      { pool_id: poolId, child_source: 'quota', pool_source: 'topup' },
      { pool_id: poolId, child_source: 'quota', pool_source: 'topup' },
    ]);
  });

  it('a monthly-invoice pool goes over: the ID is overage, counted in usage and in overage', async () => {
    const { id } = await childOnPool({ poolQuota: 1, invoice: true, quota: 5 });
    expect((await consume(id)).pool_source).toBe('quota');
    expect(await consume(id)).toMatchObject({ outcome: 'consumed', child_source: 'quota', pool_source: 'overage' });
    expect(await stateOf(id)).toMatchObject({ used: 2, pool_used: 2, pool_overage: 1 });
  });

  it('an empty prepaid pool leaves the quota unused and spends the child’s own top-up instead (no pool row)', async () => {
    const { p, id, poolId } = await childOnPool({ poolTopup: 2, quota: 5 });
    await gift(p.key, id, 2);
    await emptyPool(poolId);
    expect(await consume(id)).toMatchObject({ outcome: 'consumed', child_source: 'topup', pool_source: null });
    expect(await stateOf(id)).toMatchObject({ status: 'active', used: 0, topup: 1, pool_used: 0, pool_topup: 0 });
    expect(await ledgerOf(id)).toEqual([{ pool_id: null, child_source: 'topup', pool_source: null }]);
  });

  it('an empty prepaid pool and no top-up: pool_exhausted, nothing changes and the child is not suspended', async () => {
    const { id, poolId } = await childOnPool({ quota: 5 });
    await emptyPool(poolId);
    const before = await snapshot(env.db);
    expect(await consumeRow(id)).toMatchObject({
      outcome: 'pool_exhausted',
      child_source: null,
      pool_source: null,
      reload_pool_id: null,
      emitted: false,
    });
    expect(await snapshot(env.db)).toEqual(before);
    expect((await stateOf(id)).status).toBe('active');
  });

  it('the child’s top-up after its quota: one throttled consumption event, and the last ID suspends', async () => {
    const { p, id } = await childOnPool({ poolTopup: 3, quota: 1 });
    await gift(p.key, id, 3);
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await consumeRow(id));
    expect(results.map((r) => [r.outcome, r.child_source, r.pool_source, r.emitted])).toEqual([
      ['consumed', 'quota', 'quota', false],
      ['consumed', 'topup', null, true], // child.topup_changed (consumption), the first in 5 minutes
      ['consumed', 'topup', null, false],
      ['consumed', 'topup', null, true], // the last ID: child.suspended
    ]);
    expect(await stateOf(id)).toMatchObject({ status: 'suspended', used: 1, topup: 0 });
    const events = await eventsOf(env.db, id);
    expect(names(events).filter((n) => n !== 'child.created')).toEqual(['child.topup_changed', 'child.topup_changed', 'child.suspended']);
    expect(events.filter((e) => e.event === 'child.topup_changed').map((e) => e.data.reason)).toEqual(['gift', 'consumption']);
    expect(events.find((e) => e.data.reason === 'consumption')?.data).toEqual({
      child_api_key_id: id,
      previous_topup_balance: 3,
      topup_balance: 2,
      delta: -1,
      reason: 'consumption',
    });
    expect((await consume(id)).outcome).toBe('suspended');
  });

  it('a consumption event again once the last one is more than 5 minutes old', async () => {
    const { p, id } = await childOnPool({ poolTopup: 5, quota: 0 });
    await gift(p.key, id, 5);
    await consume(id);
    await consume(id);
    await env.db`update child_subscriptions set last_consumption_event_at = now() - interval '5 minutes 1 second' where api_key_id = ${id}`;
    expect((await consumeRow(id)).emitted).toBe(true);
    const consumption = (await eventsOf(env.db, id)).filter((e) => e.data.reason === 'consumption');
    expect(consumption.map((e) => [e.data.previous_topup_balance, e.data.topup_balance])).toEqual([
      [5, 4],
      [3, 2],
    ]);
  });

  it('the partner’s own tracker draws on its pool with no child source', async () => {
    const p = await seedPartner(env.deps, { quota: 1, topup: 1 });
    const own = await seedDirectKey(env.deps, p.account_id);
    expect(await consume(own.api_key_id)).toMatchObject({ outcome: 'consumed', child_source: null, pool_source: 'quota' });
    expect(await consume(own.api_key_id)).toMatchObject({ outcome: 'consumed', child_source: null, pool_source: 'topup' });
    expect((await consume(own.api_key_id)).outcome).toBe('pool_exhausted');
  });
});

describe('refusals change nothing', () => {
  it('a key the partner suspended or revoked is refused with its status even with quota and top-up left', async () => {
    const { p, id } = await childOnPool({ poolTopup: 2, quota: 5 });
    await gift(p.key, id, 2);
    for (const status of ['suspended', 'revoked'] as const) {
      const res = await call(env, 'partner-update-child', { key: p.key, body: { child_api_key_id: id, status } });
      expect(res.status).toBe(200);
      const before = await snapshot(env.db);
      expect(await consumeRow(id)).toMatchObject({ outcome: status, child_source: null, pool_source: null, emitted: false });
      expect(await snapshot(env.db)).toEqual(before);
    }
    // Quota used up, top-up left, key suspended by the partner: refused too, by the top-up path.
    await call(env, 'partner-update-child', { key: p.key, body: { child_api_key_id: id, status: 'active' } });
    for (let i = 0; i < 5; i++) expect((await consume(id)).child_source).toBe('quota');
    await call(env, 'partner-update-child', { key: p.key, body: { child_api_key_id: id, status: 'suspended' } });
    const before = await snapshot(env.db);
    expect((await consume(id)).outcome).toBe('suspended');
    expect(await snapshot(env.db)).toEqual(before);
    expect(await stateOf(id)).toMatchObject({ used: 5, topup: 2 });
  });

  it('a canceled subscription, a paused child (quota 0), a direct key of another account and an unknown key', async () => {
    const { id: canceled } = await childOnPool({ quota: 5 });
    await env.db`update child_subscriptions set status = 'canceled' where api_key_id = ${canceled}`;
    const { id: paused } = await childOnPool({ quota: 0 });
    const direct = await seedDirectAccount(env.deps);
    const before = await snapshot(env.db);
    expect((await consume(canceled)).outcome).toBe('canceled');
    expect((await consume(paused)).outcome).toBe('no_ids');
    expect((await consume(direct.api_key_id)).outcome).toBe('not_metered');
    expect((await consume('00000000-0000-4000-8000-000000000000')).outcome).toBe('unknown_key');
    expect(await snapshot(env.db)).toEqual(before);
    expect((await stateOf(paused)).status).toBe('active');
  });
});

describe('children racing for the last IDs of their pool', () => {
  it('two children draw exactly the pool’s quota and then its top-up, and are refused (not suspended) once it is empty', async () => {
    const p = await seedPartner(env.deps, { quota: 30, topup: 20 });
    const a = (await createChildVia(env, p.key, { monthly_id_quota: 1000 })).child.api_key_id;
    const b = (await createChildVia(env, p.key, { monthly_id_quota: 1000 })).child.api_key_id;
    const results = (
      await Promise.all(
        Array.from({ length: 12 }, async (_, lane) => {
          const mine: ConsumeResult[] = [];
          for (let i = 0; i < 10; i++) mine.push(await consume(lane % 2 ? a : b));
          return mine;
        }),
      )
    ).flat();
    const consumed = results.filter((r) => r.outcome === 'consumed');
    expect(consumed).toHaveLength(50);
    expect(results.filter((r) => r.outcome !== 'consumed').map((r) => r.outcome)).toEqual(Array<string>(70).fill('pool_exhausted'));
    expect(consumed.filter((r) => r.pool_source === 'quota')).toHaveLength(30);
    expect(consumed.filter((r) => r.pool_source === 'topup')).toHaveLength(20);
    const [ledger] = await env.db<{ quota: number; topup: number }>`
      select count(*) filter (where pool_source = 'quota')::int as quota, count(*) filter (where pool_source = 'topup')::int as topup
      from id_ledger where child_api_key_id in (${a}, ${b})`;
    expect(ledger).toEqual({ quota: 30, topup: 20 });
    const sa = await stateOf(a);
    const sb = await stateOf(b);
    expect(sa.used + sb.used).toBe(50);
    expect(sa).toMatchObject({ status: 'active', pool_used: 30, pool_topup: 0 });
    expect(sb.status).toBe('active');
  });
});

describe('a partner suspension racing consumption', () => {
  it.skipIf(!usingPostgres)(
    'no identification that starts after partner-update-child (status suspended) returned is consumed, and every consumed one has its ledger row',
    async () => {
      const { p, id } = await childOnPool({ quota: 100_000 });
      let returned = false;
      let stop = false;
      const after: ConsumeResult[] = [];
      let consumed = 0;
      const lane = async () => {
        while (!stop) {
          const startedAfter = returned;
          const r = await consume(id);
          if (r.outcome === 'consumed') consumed++;
          if (startedAfter) {
            after.push(r);
            if (after.length >= 200) stop = true;
          }
        }
      };
      const lanes = Array.from({ length: 12 }, lane);
      await new Promise((r) => setTimeout(r, 150));
      const res = await call(env, 'partner-update-child', { key: p.key, body: { child_api_key_id: id, status: 'suspended' } });
      returned = true;
      await Promise.all(lanes);
      expect(res.status).toBe(200);
      expect(after.filter((r) => r.outcome !== 'suspended')).toEqual([]);
      expect(consumed).toBeGreaterThan(0);
      expect(await ledgerOf(id)).toHaveLength(consumed);
      expect(await stateOf(id)).toMatchObject({ status: 'suspended', used: consumed, pool_used: consumed });
    },
  );
});

/**
 * sl_consume_ids: a settle batch's IDs at once. Whatever the state, it either leaves exactly what as
 * many calls of sl_consume_id leave on a twin child (balances, ledger rows, no event), or changes
 * nothing and says so, for the caller to take them one at a time.
 */
describe('several IDs at once (sl_consume_ids)', () => {
  const consumeMany = async (key: string, n: number) => {
    const [row] = await env.db<{ consumed: boolean; reload_pool_id: string | null; partner_account_id: string | null }>`
      select consumed, reload_pool_id, partner_account_id from sl_consume_ids(${key}, ${n})`;
    return row;
  };
  const ledgerSources = async (key: string) => (await ledgerOf(key)).map((r) => `${r.child_source}/${r.pool_source}`);

  it.each([
    { name: 'quota on both sides', quota: 10, used: 0, poolQuota: 100, n: 5, taken: true },
    { name: 'up to one short of the child’s last ID', quota: 10, used: 4, poolQuota: 100, n: 5, taken: true },
    { name: 'the pool’s last IDs exactly', quota: 100, used: 0, poolQuota: 6, n: 6, taken: true },
    { name: 'the child’s last ID among them (it suspends: one at a time)', quota: 10, used: 5, poolQuota: 100, n: 5, taken: false },
    { name: 'more than the pool’s quota has left (its top-up: one at a time)', quota: 100, used: 0, poolQuota: 4, poolTopup: 10, n: 5, taken: false },
    { name: 'a suspended key', quota: 10, used: 0, poolQuota: 100, n: 3, taken: false, suspend: true },
  ])('$name: taken $taken', async ({ quota, used, poolQuota, poolTopup, n, taken, suspend }) => {
    const twins = [];
    for (let i = 0; i < 2; i++) {
      const c = await childOnPool({ quota, poolQuota, poolTopup });
      await env.db`update child_subscriptions set ids_used_this_period = ${used} where api_key_id = ${c.id}`;
      await env.db`update pools set ids_used_this_period = ${used} where id = ${c.poolId}`;
      if (suspend) await env.db`update api_keys set status = 'suspended', suspended_reason = 'manual' where id = ${c.id}`;
      twins.push(c);
    }
    const [batch, single] = twins as [(typeof twins)[0], (typeof twins)[0]];
    const before = await stateOf(batch.id);
    const eventsBefore = (await eventsOf(env.db, batch.id)).length;
    const answer = await consumeMany(batch.id, n);
    expect(answer?.consumed).toBe(taken);
    if (!taken) {
      expect(await stateOf(batch.id)).toEqual(before);
      expect(await ledgerOf(batch.id)).toEqual([]);
      return;
    }
    expect(answer?.partner_account_id).toBe(batch.p.account_id);
    for (let i = 0; i < n; i++) expect((await consumeRow(single.id)).outcome).toBe('consumed');
    expect(await stateOf(batch.id)).toEqual(await stateOf(single.id));
    expect(await ledgerSources(batch.id)).toEqual(await ledgerSources(single.id));
    expect(await ledgerSources(batch.id)).toHaveLength(n);
    expect((await eventsOf(env.db, batch.id)).length).toBe(eventsBefore);
  });
});
