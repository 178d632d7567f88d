/**
 * Exact accounting of the ID ledger under concurrency.
 *
 * With DATABASE_URL set every test runs against a real Postgres with a 20-connection pool, so the
 * Promise.all batches below really execute on parallel backends and meet each other on row locks
 * (the first test proves the parallelism exists). Without it they run on PGlite, where everything
 * serialises; the invariants must hold there too, so nothing is skipped except the parallelism probe.
 */

import { AppError, authenticateKey, type ConsumeResult, consumeIdentification, rollOverDuePeriods } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xorshift32 } from './support/addresses.ts';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { createChildVia, seedPartner, uniqueDomain } from './support/seed.ts';
import { sleep } from './support/wait.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv({ pool: 20 });
});
afterAll(() => env.close());

const DAY_MS = 86_400_000;

type Partner = Awaited<ReturnType<typeof seedPartner>>;

interface Child {
  id: string;
  key: string;
}

/** A child of `p` with `quota` IDs a month, created through the API (support/seed.ts). */
async function childWithQuota(p: Partner, quota: number): Promise<Child> {
  const { child } = await createChildVia(env, p.key, { name: 'Concurrent child', domain: uniqueDomain('conc'), monthly_id_quota: quota });
  return { id: child.api_key_id, key: child.key };
}

const consume = (apiKeyId: string): Promise<ConsumeResult> => consumeIdentification({ ctx: env.deps, input: { apiKeyId } });

async function consumeSequentially(apiKeyId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) expect((await consume(apiKeyId)).outcome).toBe('consumed');
}

interface ChildState {
  status: string;
  suspended_reason: string | null;
  monthly_id_quota: number;
  pending_monthly_id_quota: number | null;
  ids_used_this_period: number;
  topup_balance: number;
  current_period_start: Date;
  current_period_end: Date;
  last_consumption_event_at: Date | null;
}

async function childState(id: string): Promise<ChildState> {
  const [row] = await env.db<ChildState>`
    select k.status, k.suspended_reason, s.monthly_id_quota, s.pending_monthly_id_quota, s.ids_used_this_period,
           s.topup_balance, s.current_period_start, s.current_period_end, s.last_consumption_event_at
    from api_keys k join child_subscriptions s on s.api_key_id = k.id
    where k.id = ${id}`;
  if (!row) throw new Error(`no child ${id}`);
  return row;
}

interface PoolState {
  id: string;
  monthly_id_quota: number;
  ids_used_this_period: number;
  overage_ids_this_period: number;
  topup_balance: number;
  current_period_start: Date | null;
  current_period_end: Date | null;
}

async function poolOf(accountId: string): Promise<PoolState> {
  const [row] = await env.db<PoolState>`
    select id, monthly_id_quota, ids_used_this_period, overage_ids_this_period, topup_balance,
           current_period_start, current_period_end
    from pools where account_id = ${accountId}`;
  if (!row) throw new Error(`no pool for ${accountId}`);
  return row;
}

interface LedgerRow {
  id: number;
  pool_id: string | null;
  child_source: string | null;
  pool_source: string | null;
}

const ledgerOf = (childId: string) =>
  env.db<LedgerRow>`
    select id::int as id, pool_id, child_source, pool_source from id_ledger
    where child_api_key_id = ${childId} order by id`;

interface StoredEvent {
  event: string;
  created_at: Date;
  /** Physical position (block, item) in the append-only outbox heap: the insertion order. */
  block: number;
  item: number;
  partner_account_id: string | null;
  timestamp: string;
  data: Json;
}

async function eventsOf(childId: string, event?: string): Promise<StoredEvent[]> {
  const rows = await env.db<{ event: string; created_at: Date; ctid: string; body: string; partner_account_id: string | null }>`
    select event, created_at, ctid::text as ctid, body, partner_account_id from events
    where child_api_key_id = ${childId}`;
  return rows
    .map((r) => {
      const [block = '0', item = '0'] = r.ctid.replace(/[()]/g, '').split(',');
      const env_ = JSON.parse(r.body) as { event: string; timestamp: string; data: Json };
      expect(env_.event).toBe(r.event);
      return {
        event: r.event,
        created_at: r.created_at,
        block: Number(block),
        item: Number(item),
        partner_account_id: r.partner_account_id,
        timestamp: env_.timestamp,
        data: env_.data,
      };
    })
    .filter((e) => event === undefined || e.event === event)
    .sort(
      (a, b) =>
        a.created_at.getTime() - b.created_at.getTime() || Date.parse(a.timestamp) - Date.parse(b.timestamp) || a.block - b.block || a.item - b.item,
    );
}

async function eventCount(): Promise<number> {
  const [row] = await env.db<{ n: number }>`select count(*)::int as n from events`;
  return row?.n ?? -1;
}

/** A deterministic shuffle (xorshift), so a failure reproduces with the same interleaving. */
function shuffled<T>(items: T[], seed = 0x9e3779b9): T[] {
  const out = [...items];
  const next = xorshift32(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = next() % (i + 1);
    const a = out[i] as T;
    out[i] = out[j] as T;
    out[j] = a;
  }
  return out;
}

describe('test harness', () => {
  it.skipIf(!usingPostgres)('runs concurrent statements on several Postgres backends at once (the races below are real)', async () => {
    const rows = await Promise.all(
      Array.from({ length: 20 }, () => env.db<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(0.05)::text as slept`),
    );
    const pids = new Set(rows.map((r) => r[0]?.pid));
    expect(pids.size).toBeGreaterThanOrEqual(10);
  });
});

describe('consumption: quota first, then top-up, never more than quota + top-up', () => {
  it('200 concurrent identifications on a child with quota 50 and top-up 25 consume exactly 75 IDs (50 quota-funded from the pool, then 25 top-up), suspend it once, and emit one throttled consumption event', async () => {
    const p = await seedPartner(env.deps, { quota: 1000, topup: 25 });
    const child = await childWithQuota(p, 50);
    const gift = await call(env, 'partner-transfer-topup', { key: p.key, body: { child_api_key_id: child.id, amount: 25 } });
    expect(gift.status).toBe(200);
    const poolBefore = await poolOf(p.account_id);
    expect(poolBefore).toMatchObject({ monthly_id_quota: 1000, ids_used_this_period: 0, topup_balance: 0 });
    expect(await childState(child.id)).toMatchObject({ status: 'active', ids_used_this_period: 0, topup_balance: 25 });

    const results = await Promise.all(Array.from({ length: 200 }, () => consume(child.id)));

    const consumed = results.filter((r) => r.outcome === 'consumed');
    expect(consumed).toHaveLength(75);
    // Every refused identification saw the suspended key: nothing else can refuse here.
    expect(results.filter((r) => r.outcome !== 'consumed').map((r) => r.outcome)).toEqual(Array<string>(125).fill('suspended'));
    expect(consumed.filter((r) => r.child_source === 'quota' && r.pool_source === 'quota')).toHaveLength(50);
    expect(consumed.filter((r) => r.child_source === 'topup' && r.pool_source === null)).toHaveLength(25);

    expect(await childState(child.id)).toMatchObject({
      status: 'suspended',
      suspended_reason: 'quota_exhausted',
      monthly_id_quota: 50,
      ids_used_this_period: 50,
      topup_balance: 0,
    });

    // The ledger: one row per ID, the quota rows before the top-up rows (a top-up decision is read
    // only once the last quota ID is committed, and a corrected decision writes a new row):
    // the 50 quota IDs drew on the pool's quota, then the 25 top-up IDs drew on nothing else.
    const ledger = await ledgerOf(child.id);
    expect(ledger).toHaveLength(75);
    expect(ledger.slice(0, 50).every((r) => r.child_source === 'quota' && r.pool_source === 'quota' && r.pool_id === poolBefore.id)).toBe(true);
    expect(ledger.slice(50).every((r) => r.child_source === 'topup' && r.pool_source === null && r.pool_id === null)).toBe(true);

    const poolAfter = await poolOf(p.account_id);
    expect(poolAfter.ids_used_this_period - poolBefore.ids_used_this_period).toBe(50);
    expect(poolAfter.topup_balance).toBe(poolBefore.topup_balance);

    const suspended = await eventsOf(child.id, 'child.suspended');
    expect(suspended).toHaveLength(1);
    expect(suspended[0]?.partner_account_id).toBe(p.account_id);
    expect(suspended[0]?.data).toEqual({
      child_api_key_id: child.id,
      ids_used_this_period: 50,
      monthly_id_quota: 50,
      topup_balance: 0,
      reason: 'quota_exhausted',
    });
    expect(await eventsOf(child.id, 'child.reactivated')).toEqual([]);

    // Consumption from top-up: throttled to one per child per 5 minutes; its delta is that one ID.
    const consumption = (await eventsOf(child.id, 'child.topup_changed')).filter((e) => e.data.reason === 'consumption');
    expect(consumption).toHaveLength(1);
    expect(consumption[0]?.data).toEqual({
      child_api_key_id: child.id,
      previous_topup_balance: 25,
      topup_balance: 24,
      delta: -1,
      reason: 'consumption',
    });
    expect((await childState(child.id)).last_consumption_event_at).not.toBeNull();
  });
});

describe('transfers racing consumption: both balances change or neither, and nothing is lost', () => {
  it('40 concurrent transfers of 3 interleaved with 150 identifications conserve partner top-up + child top-up + consumed top-up IDs exactly, and suspend/reactivate once per transition', async () => {
    // 30 transfers of 3 fit, the other 10 must be refused whole. Small transfers against many
    // identifications keep draining the child, so it goes through many suspend/reactivate cycles.
    const AMOUNT = 3;
    const OK = 30;
    const T0 = AMOUNT * OK + 2;
    const p = await seedPartner(env.deps, { quota: 1000, topup: T0 });
    const child = await childWithQuota(p, 0);
    const poolBefore = await poolOf(p.account_id);
    expect(poolBefore.topup_balance).toBe(T0);

    type Outcome = { kind: 'transfer'; status: number; body: Json } | { kind: 'consume'; result: ConsumeResult };
    const tasks: Array<() => Promise<Outcome>> = shuffled([
      ...Array.from({ length: 40 }, () => async (): Promise<Outcome> => {
        const res = await call(env, 'partner-transfer-topup', { key: p.key, body: { child_api_key_id: child.id, amount: AMOUNT } });
        return { kind: 'transfer', status: res.status, body: res.body };
      }),
      ...Array.from({ length: 150 }, () => async (): Promise<Outcome> => ({ kind: 'consume', result: await consume(child.id) })),
    ]);
    // Twelve concurrent lanes, each running its share of the shuffled tasks one after another, so
    // transfers and identifications keep meeting over the whole run (not all identifications first).
    const LANES = 12;
    const lanes = Array.from({ length: LANES }, (_, lane) => tasks.filter((_, i) => i % LANES === lane));
    const outcomes = (
      await Promise.all(
        lanes.map(async (lane) => {
          const done: Outcome[] = [];
          for (const task of lane) done.push(await task());
          return done;
        }),
      )
    ).flat();

    const transfers = outcomes.flatMap((o) => (o.kind === 'transfer' ? [o] : []));
    const consumptions = outcomes.flatMap((o) => (o.kind === 'consume' ? [o.result] : []));
    expect(transfers.map((t) => t.status).filter((s) => s !== 200 && s !== 402)).toEqual([]);
    const ok = transfers.filter((t) => t.status === 200);
    const refused = transfers.filter((t) => t.status === 402);
    expect(ok).toHaveLength(OK);
    expect(refused).toHaveLength(40 - OK);
    // Transfers serialise on the pool row: the debits form the exact chain T0 − 3, T0 − 6, …, 2.
    expect(ok.map((t) => t.body.partner_topup_balance as number).sort((a, b) => b - a)).toEqual(
      Array.from({ length: OK }, (_, i) => T0 - AMOUNT * (i + 1)),
    );
    expect(ok.every((t) => t.body.success === true && t.body.transferred === AMOUNT)).toBe(true);
    // A refused transfer moved nothing: it saw the remainder (2) and reports it.
    for (const r of refused) {
      expect(r.body).toEqual({
        success: false,
        error: expect.any(String) as unknown,
        code: 'insufficient_topup',
        partner_topup_balance: 2,
        requested_amount: AMOUNT,
      });
    }

    expect(consumptions.map((c) => c.outcome).filter((o) => !['consumed', 'no_ids', 'suspended'].includes(o))).toEqual([]);
    const consumedCount = consumptions.filter((c) => c.outcome === 'consumed').length;
    expect(consumedCount).toBeGreaterThan(0);
    expect(consumptions.filter((c) => c.outcome === 'consumed').every((c) => c.child_source === 'topup' && c.pool_source === null)).toBe(true);

    const pool = await poolOf(p.account_id);
    const state = await childState(child.id);
    const ledger = await ledgerOf(child.id);
    expect(pool.topup_balance).toBe(T0 - AMOUNT * ok.length);
    expect(pool.ids_used_this_period).toBe(poolBefore.ids_used_this_period); // quota 0: the child never drew on the pool
    expect(pool.topup_balance).toBeGreaterThanOrEqual(0);
    expect(state.topup_balance).toBeGreaterThanOrEqual(0);
    expect(state.ids_used_this_period).toBe(0);
    // Ledger rows agree with the outcomes and with the balances.
    expect(ledger).toHaveLength(consumedCount);
    expect(ledger.every((r) => r.child_source === 'topup' && r.pool_source === null)).toBe(true);
    expect(state.topup_balance).toBe(AMOUNT * ok.length - ledger.length);
    // Conservation: nothing created, nothing lost.
    expect(pool.topup_balance + state.topup_balance + ledger.length).toBe(T0);
    // Top-up 0 after at least one consumption can only mean the last ID went and the child is suspended.
    expect(state.status).toBe(state.topup_balance === 0 ? 'suspended' : 'active');

    // One child.topup_changed (gift) per successful transfer, each a +AMOUNT step of the child's balance.
    const topupEvents = await eventsOf(child.id, 'child.topup_changed');
    const gifts = topupEvents.filter((e) => e.data.reason === 'gift');
    expect(gifts).toHaveLength(ok.length);
    for (const g of gifts) {
      expect(g.data).toEqual({
        child_api_key_id: child.id,
        previous_topup_balance: expect.any(Number) as unknown,
        topup_balance: (g.data.previous_topup_balance as number) + AMOUNT,
        delta: AMOUNT,
        reason: 'gift',
      });
    }
    expect(new Set(ok.map((t) => t.body.child_topup_balance))).toEqual(new Set(gifts.map((g) => g.data.topup_balance)));
    expect(topupEvents.filter((e) => e.data.reason === 'consumption')).toHaveLength(1);
    expect(topupEvents.filter((e) => e.data.reason !== 'consumption' && e.data.reason !== 'gift')).toEqual([]);

    // Suspension and reactivation alternate, once per transition: every exhaustion suspends once;
    // the next transfer (which finds top-up 0) reactivates once; the very first transfer found an
    // active child with nothing to spend, so it reactivated nothing.
    const suspendedEvents = await eventsOf(child.id, 'child.suspended');
    const reactivated = await eventsOf(child.id, 'child.reactivated');
    expect(suspendedEvents.length).toBeGreaterThanOrEqual(1); // the race did drain the child at least once
    expect(reactivated.length).toBe(suspendedEvents.length - (state.status === 'suspended' ? 1 : 0));
    expect(gifts.filter((g) => g.data.previous_topup_balance === 0)).toHaveLength(reactivated.length + 1);
    for (const s of suspendedEvents) {
      expect(s.data).toEqual({
        child_api_key_id: child.id,
        ids_used_this_period: 0,
        monthly_id_quota: 0,
        topup_balance: 0,
        reason: 'quota_exhausted',
      });
    }
    for (const r of reactivated) {
      expect(r.data).toEqual({
        child_api_key_id: child.id,
        ids_used_this_period: 0,
        monthly_id_quota: 0,
        topup_balance: AMOUNT,
        reason: 'topup_purchased',
      });
    }
  });
});

describe('period rollover', () => {
  async function setPeriodEnd(childId: string, end: string) {
    await env.db`update child_subscriptions
                 set current_period_start = ${end}::timestamptz - interval '30 days', current_period_end = ${end}::timestamptz
                 where api_key_id = ${childId}`;
  }

  /** Children in every state the sweep treats differently. */
  async function makeChildren(p: Partner) {
    const exhausted = await childWithQuota(p, 2);
    await consumeSequentially(exhausted.id, 2);
    expect(await childState(exhausted.id)).toMatchObject({ status: 'suspended', suspended_reason: 'quota_exhausted' });

    const decreased = await childWithQuota(p, 10);
    await consumeSequentially(decreased.id, 3);
    const dec = await call(env, 'partner-update-child', { key: p.key, body: { child_api_key_id: decreased.id, monthly_id_quota: 4 } });
    expect(dec.status).toBe(200);
    expect(await childState(decreased.id)).toMatchObject({ monthly_id_quota: 10, pending_monthly_id_quota: 4, ids_used_this_period: 3 });
    // A queued decrease is not announced until it applies.
    expect(await eventsOf(decreased.id, 'child.updated')).toEqual([]);

    const manual = await childWithQuota(p, 10);
    await consumeSequentially(manual.id, 1);
    const sus = await call(env, 'partner-update-child', { key: p.key, body: { child_api_key_id: manual.id, status: 'suspended' } });
    expect(sus.status).toBe(200);
    expect(await childState(manual.id)).toMatchObject({ status: 'suspended', suspended_reason: 'manual' });

    const plain = await childWithQuota(p, 5);
    await consumeSequentially(plain.id, 1);
    return { exhausted, decreased, manual, plain };
  }

  async function expectRolledOnce(child: Child, previousEnd: Date, newEnd: Date, quota: number, topup = 0) {
    const rolled = await eventsOf(child.id, 'child.period_rolled');
    expect(rolled).toHaveLength(1);
    expect(rolled[0]?.data).toEqual({
      child_api_key_id: child.id,
      previous_period_end: previousEnd.toISOString(),
      new_period_end: newEnd.toISOString(),
      monthly_id_quota: quota,
      ids_used_this_period: 0,
      topup_balance: topup,
    });
  }

  it('a second sweep after a completed one rolls nothing and adds no events (rollover is idempotent)', async () => {
    const p = await seedPartner(env.deps, { quota: 1000 });
    const c = await makeChildren(p);
    const ago10d = new Date(Date.now() - 10 * DAY_MS).toISOString();
    const ago5m = new Date(Date.now() - 5 * 60_000).toISOString();
    await setPeriodEnd(c.exhausted.id, ago10d);
    await setPeriodEnd(c.decreased.id, ago5m);
    await setPeriodEnd(c.manual.id, ago10d);
    await setPeriodEnd(c.plain.id, ago5m);

    const before = Date.now();
    const first = await rollOverDuePeriods({ ctx: env.deps, input: {} });
    const after = Date.now();
    expect(first).toEqual({ children: 4, pools: 0 });
    for (const child of Object.values(c)) {
      const s = await childState(child.id);
      expect(s.ids_used_this_period).toBe(0);
      // max(previous end, now) + 30 days: both ends were in the past, so now + 30 days.
      expect(s.current_period_end.getTime()).toBeGreaterThanOrEqual(before + 30 * DAY_MS);
      expect(s.current_period_end.getTime()).toBeLessThanOrEqual(after + 30 * DAY_MS);
      expect(s.current_period_end.getTime() - s.current_period_start.getTime()).toBe(30 * DAY_MS);
      expect(await eventsOf(child.id, 'child.period_rolled')).toHaveLength(1);
    }
    expect(await childState(c.exhausted.id)).toMatchObject({ status: 'active', suspended_reason: null });
    expect(await childState(c.manual.id)).toMatchObject({ status: 'suspended', suspended_reason: 'manual' });
    expect(await childState(c.decreased.id)).toMatchObject({ monthly_id_quota: 4, pending_monthly_id_quota: null });

    const eventsAfterFirst = await eventCount();
    const statesAfterFirst = await Promise.all(Object.values(c).map((child) => childState(child.id)));
    const second = await rollOverDuePeriods({ ctx: env.deps, input: {} });
    expect(second).toEqual({ children: 0, pools: 0 });
    expect(await eventCount()).toBe(eventsAfterFirst);
    expect(await Promise.all(Object.values(c).map((child) => childState(child.id)))).toEqual(statesAfterFirst);
  });

  it('concurrent sweeps roll each due child and pool exactly once: new end = max(previous end, now) + 30 days, period_rolled before reactivated, manual suspension kept, queued decrease applied', async () => {
    const p = await seedPartner(env.deps, { quota: 1000 });
    const c = await makeChildren(p);
    const farPast = await childWithQuota(p, 7);
    const boundary = await childWithQuota(p, 7);
    const notYet = await childWithQuota(p, 7);
    // A monthly-invoice pool with overage, due too: its invoice must be written once.
    const invoicing = await seedPartner(env.deps, { billing: 'invoice_monthly', quota: 10, card: 'pm_card_visa', perIdPence: 2 });

    const now = new Date(Date.now() - 1000); // the sweep's clock, explicit
    const at = (offsetMs: number) => new Date(now.getTime() + offsetMs);
    const ends = {
      exhausted: at(-60 * 60_000),
      decreased: at(-3 * 60_000),
      manual: at(-2 * DAY_MS),
      plain: at(-1),
      farPast: at(-400 * DAY_MS),
      boundary: at(0), // "at or before now" is due
    };
    const children: Record<keyof typeof ends, Child> = { ...c, farPast, boundary };
    for (const [name, end] of Object.entries(ends)) {
      const child = children[name as keyof typeof ends];
      await setPeriodEnd(child.id, end.toISOString());
    }
    const notYetEnd = at(1);
    await setPeriodEnd(notYet.id, notYetEnd.toISOString());
    const quotas = { exhausted: 2, decreased: 4, manual: 10, plain: 5, farPast: 7, boundary: 7 };
    await env.db`update pools set ids_used_this_period = 15, overage_ids_this_period = 5,
                   current_period_start = ${at(-30 * DAY_MS).toISOString()}::timestamptz,
                   current_period_end = ${at(-10 * 60_000).toISOString()}::timestamptz
                 where account_id = ${invoicing.account_id}`;
    const notYetBefore = await childState(notYet.id);

    // Four sweeps at once, in small batches so they keep competing for the same rows (SKIP LOCKED).
    const sweeps = await Promise.all(Array.from({ length: 4 }, () => rollOverDuePeriods({ ctx: env.deps, input: { now, batchSize: 2 } })));
    expect(sweeps.reduce((n, s) => n + s.children, 0)).toBe(6);
    expect(sweeps.reduce((n, s) => n + s.pools, 0)).toBe(1);

    const newEnd = at(30 * DAY_MS); // every due end is <= now, so max(previous end, now) = now
    for (const name of Object.keys(ends) as Array<keyof typeof ends>) {
      const child = children[name];
      const s = await childState(child.id);
      expect(s, name).toMatchObject({ ids_used_this_period: 0, monthly_id_quota: quotas[name], pending_monthly_id_quota: null });
      expect(s.current_period_end.toISOString(), name).toBe(newEnd.toISOString());
      expect(s.current_period_start.toISOString(), name).toBe(now.toISOString());
      await expectRolledOnce(child, ends[name], newEnd, quotas[name]);
    }
    // Not yet due by one millisecond: untouched, no event.
    expect(await childState(notYet.id)).toEqual(notYetBefore);
    expect(notYetBefore.current_period_end.toISOString()).toBe(notYetEnd.toISOString());
    expect(await eventsOf(notYet.id, 'child.period_rolled')).toEqual([]);

    // The exhausted child comes back: child.period_rolled first, then child.reactivated (period_rolled),
    // in the same transaction. Both rows carry the same created_at (transaction time), and the body
    // timestamps (clock_timestamp(), millisecond precision) are often equal too, so eventsOf breaks
    // the tie by the rows' physical insertion order in the append-only outbox.
    expect(await childState(c.exhausted.id)).toMatchObject({ status: 'active', suspended_reason: null });
    const exhaustedEvents = (await eventsOf(c.exhausted.id)).filter((e) => e.event === 'child.period_rolled' || e.event === 'child.reactivated');
    expect(exhaustedEvents.map((e) => e.event)).toEqual(['child.period_rolled', 'child.reactivated']);
    const [rolledEv, reactivatedEv] = exhaustedEvents;
    if (!rolledEv || !reactivatedEv) throw new Error('missing events');
    expect(rolledEv.created_at.getTime()).toBe(reactivatedEv.created_at.getTime());
    expect(Date.parse(rolledEv.timestamp)).toBeLessThanOrEqual(Date.parse(reactivatedEv.timestamp));
    expect(reactivatedEv.data).toEqual({
      child_api_key_id: c.exhausted.id,
      ids_used_this_period: 0,
      monthly_id_quota: 2,
      topup_balance: 0,
      reason: 'period_rolled',
    });

    // A manual suspension is the partner's: the period rolls, the suspension stays.
    expect(await childState(c.manual.id)).toMatchObject({ status: 'suspended', suspended_reason: 'manual' });
    expect(await eventsOf(c.manual.id, 'child.reactivated')).toEqual([]);
    for (const child of [c.decreased, c.plain, farPast, boundary]) {
      expect(await childState(child.id)).toMatchObject({ status: 'active' });
      expect(await eventsOf(child.id, 'child.reactivated')).toEqual([]);
    }

    // The queued decrease applies now, announced once in child.updated's delta.
    const updated = await eventsOf(c.decreased.id, 'child.updated');
    expect(updated).toHaveLength(1);
    expect(updated[0]?.data).toEqual({
      child_api_key_id: c.decreased.id,
      delta: { monthly_id_quota: 4 },
      name: 'Concurrent child',
      status: 'active',
      monthly_id_quota: 4,
      ids_used_this_period: 0,
      topup_balance: 0,
      current_period_end: newEnd.toISOString(),
      sub_status: 'active',
    });
    for (const child of [c.exhausted, c.plain, farPast, boundary]) {
      expect(await eventsOf(child.id, 'child.updated')).toEqual([]);
    }

    // The pool rolled once and was invoiced once.
    const pool = await poolOf(invoicing.account_id);
    expect(pool).toMatchObject({ ids_used_this_period: 0, overage_ids_this_period: 0 });
    expect(pool.current_period_end?.toISOString()).toBe(newEnd.toISOString());
    const invoices = await env.db<{ ids_used: number; overage_ids: number; amount_pence: number; status: string }>`
      select ids_used, overage_ids, amount_pence::float8 as amount_pence, status from invoices where pool_id = ${pool.id}`;
    expect(invoices).toEqual([{ ids_used: 15, overage_ids: 5, amount_pence: 10, status: 'outstanding' }]);

    // And nothing is left due: another sweep at the same instant finds nothing and emits nothing.
    const eventsBefore = await eventCount();
    expect(await rollOverDuePeriods({ ctx: env.deps, input: { now } })).toEqual({ children: 0, pools: 0 });
    expect(await eventCount()).toBe(eventsBefore);
  });
});

describe('key rotation racing requests with the old key', () => {
  it('every authentication with the old key that starts after partner-rotate-child-key returned is 401, and the new key authenticates', async () => {
    const p = await seedPartner(env.deps, { quota: 1000 });
    const child = await childWithQuota(p, 10);

    type Result = 'ok' | 401 | 'other';
    interface Attempt {
      startedAfterRotationReturned: boolean;
      completedBeforeRotationSent: boolean;
      result: Result;
      error?: unknown;
    }
    const attempts: Attempt[] = [];
    let rotationSent = false;
    let rotationReturned = false;
    let stop = false;
    let afterCount = 0;

    const worker = async () => {
      while (!stop) {
        const startedAfterRotationReturned = rotationReturned;
        let result: Result;
        let error: unknown;
        try {
          const caller = await authenticateKey({ ctx: env.deps, input: { key: child.key } });
          result = caller.apiKeyId === child.id ? 'ok' : 'other';
        } catch (err) {
          result = err instanceof AppError && err.status === 401 ? 401 : 'other';
          error = err;
        }
        attempts.push({ startedAfterRotationReturned, completedBeforeRotationSent: !rotationSent, result, error });
        if (startedAfterRotationReturned && ++afterCount >= 300) stop = true;
        // Real requests arrive as I/O events; a loop of pure promise continuations (synchronous key
        // hashing, PGlite's promise queue) would otherwise starve the timers this test relies on.
        await new Promise((resolve) => setImmediate(resolve));
      }
    };

    const workers = Array.from({ length: 12 }, () => worker());
    let rotation: Awaited<ReturnType<typeof call>>;
    try {
      // Let the old key be used for a while, then rotate in the middle of the traffic.
      for (let i = 0; i < 2000 && attempts.length < 60; i++) await sleep(2);
      rotationSent = true;
      rotation = await call(env, 'partner-rotate-child-key', { key: p.key, body: { child_api_key_id: child.id } });
      rotationReturned = true;
    } finally {
      if (!rotationReturned) stop = true;
      await Promise.all(workers);
    }

    expect(rotation.status, JSON.stringify(rotation.body)).toBe(200);
    expect(attempts.filter((a) => a.result === 'other').map((a) => String(a.error))).toEqual([]);
    const before = attempts.filter((a) => a.completedBeforeRotationSent);
    const after = attempts.filter((a) => a.startedAfterRotationReturned);
    expect(before.length).toBeGreaterThanOrEqual(60);
    expect(before.every((a) => a.result === 'ok')).toBe(true);
    expect(after.length).toBeGreaterThanOrEqual(300);
    expect(after.filter((a) => a.result !== 401)).toEqual([]);

    const newKey = rotation.body.key as string;
    expect(newKey).not.toBe(child.key);
    expect(rotation.body.old_key_prefix).toBe(child.key.slice(0, (rotation.body.key_prefix as string).length));
    const caller = await authenticateKey({ ctx: env.deps, input: { key: newKey } });
    expect(caller.apiKeyId).toBe(child.id);
    await expect(authenticateKey({ ctx: env.deps, input: { key: child.key } })).rejects.toMatchObject({ status: 401 });
    const [rotations] = await env.db<{ n: number }>`select count(*)::int as n from key_rotations where api_key_id = ${child.id}`;
    expect(rotations?.n).toBe(1);
  });
});
