import { consumeIdentification, rollOverDuePeriods, silentLogger } from '@sightline/core';
import { runOperatorCommand, startScheduler } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { createChildVia, seedDirectKey, seedPartner } from './support/seed.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(() => env.close());

const consume = (apiKeyId: string) => consumeIdentification({ ctx: env.deps, input: { apiKeyId } });
const DAY = 86400_000;

async function endPoolPeriod(accountId: string, endedAgo: string) {
  await env.db`update pools set current_period_start = now() - interval '30 days' - ${endedAgo}::interval,
                               current_period_end = now() - ${endedAgo}::interval
               where account_id = ${accountId}`;
}

describe('pool period rollover', () => {
  it('resets pool usage, starts the next period at max(end, now) and applies a queued pool quota decrease', async () => {
    const p = await seedPartner(env.deps, { quota: 50 });
    const own = await seedDirectKey(env.deps, p.account_id);
    for (let i = 0; i < 7; i++) await consume(own.api_key_id);
    await runOperatorCommand(env.deps, 'set-billing', { 'account-id': p.account_id, quota: '20' });
    await endPoolPeriod(p.account_id, '3 days');
    const now = new Date();
    const result = await rollOverDuePeriods({ ctx: env.deps, input: { now } });
    expect(result.pools).toBeGreaterThanOrEqual(1);
    const pool = (await call(env, 'partner-pool-state', { key: p.key })).body.pool as Json;
    expect(pool).toMatchObject({ ids_used_this_period: 0, monthly_id_quota: 20 });
    expect(Date.parse(pool.current_period_start as string)).toBe(now.getTime());
    expect(Date.parse(pool.current_period_end as string)).toBe(now.getTime() + 30 * DAY);
    expect((await rollOverDuePeriods({ ctx: env.deps, input: { now } })).pools).toBe(0);
  });

  it('turns a monthly-invoice period’s overage into an outstanding invoice at the per-ID rate', async () => {
    const p = await seedPartner(env.deps, { billing: 'invoice_monthly', quota: 3, card: 'pm_x', perIdPence: 2.5 });
    const own = await seedDirectKey(env.deps, p.account_id);
    const sources = [];
    for (let i = 0; i < 5; i++) sources.push((await consume(own.api_key_id)).pool_source);
    expect(sources).toEqual(['quota', 'quota', 'quota', 'overage', 'overage']);
    await endPoolPeriod(p.account_id, '1 hour');
    await rollOverDuePeriods({ ctx: env.deps, input: {} });
    const invoices = await env.db<{ ids_used: number; overage_ids: number; amount_pence: number; status: string }>`
      select ids_used, overage_ids, amount_pence::float8 as amount_pence, status from invoices i
      join pools p on p.id = i.pool_id where p.account_id = ${p.account_id}`;
    expect(invoices).toEqual([{ ids_used: 5, overage_ids: 2, amount_pence: 5, status: 'outstanding' }]);
    // The outstanding invoice now blocks new children until it is settled.
    const blocked = await call(env, 'partner-create-child-key', { key: p.key, body: { name: 'x', domain: 'blocked-by-invoice.example.com' } });
    expect(blocked.status).toBe(409);
  });

  it('records a period without overage as a paid zero invoice', async () => {
    const p = await seedPartner(env.deps, { billing: 'invoice_monthly', quota: 10, card: 'pm_x', perIdPence: 2 });
    await endPoolPeriod(p.account_id, '1 hour');
    await rollOverDuePeriods({ ctx: env.deps, input: {} });
    const [inv] = await env.db<{ status: string; amount_pence: number }>`
      select status, amount_pence::float8 as amount_pence from invoices i join pools p on p.id = i.pool_id where p.account_id = ${p.account_id}`;
    expect(inv).toEqual({ status: 'paid', amount_pence: 0 });
  });

  it('rolls children in bounded batches until none is due', async () => {
    const p = await seedPartner(env.deps, { quota: 1000 });
    const kids = await Promise.all(Array.from({ length: 7 }, () => createChildVia(env, p.key, { monthly_id_quota: 2 })));
    for (const k of kids) {
      await env.db`update child_subscriptions set current_period_end = now() - interval '1 minute', current_period_start = now() - interval '31 days'
                   where api_key_id = ${k.child.api_key_id}`;
    }
    const result = await rollOverDuePeriods({ ctx: env.deps, input: { batchSize: 3 } });
    expect(result.children).toBe(7);
  });

  it('writes a batch’s events as sl_emit would, child by child in period-end order, on the transaction’s one increasing clock', async () => {
    const withHook = await seedPartner(env.deps, { quota: 1000 });
    const withoutHook = await seedPartner(env.deps, { quota: 1000 });
    await env.db`update accounts set partner_webhook_url = 'https://hooks.example.com/rollover', partner_webhook_secret_sealed = 'sealed'
                 where id = ${withHook.account_id}`;
    const exhausted = (await createChildVia(env, withHook.key, { monthly_id_quota: 2 })).child.api_key_id;
    await consume(exhausted);
    await consume(exhausted);
    const decreased = (await createChildVia(env, withHook.key, { monthly_id_quota: 10 })).child.api_key_id;
    await consume(decreased);
    const dec = await call(env, 'partner-update-child', { key: withHook.key, body: { child_api_key_id: decreased, monthly_id_quota: 4 } });
    expect(dec.status).toBe(200);
    const plain = (await createChildVia(env, withHook.key, { monthly_id_quota: 5 })).child.api_key_id;
    const elsewhere = (await createChildVia(env, withoutHook.key, { monthly_id_quota: 5 })).child.api_key_id;
    const order = [exhausted, decreased, plain, elsewhere];
    for (const [i, id] of order.entries()) {
      const minutesAgo = order.length - i;
      await env.db`update child_subscriptions set current_period_end = now() - ${minutesAgo} * interval '1 minute',
                                                  current_period_start = now() - interval '31 days'
                   where api_key_id = ${id}`;
    }
    const [before] = await env.db<{ seq: number }>`select coalesce(max(seq), 0)::int as seq from events`;

    // An event before and after the batch in the same transaction: all three share one clock.
    const { rolled, carried } = await env.db.begin(async (tx) => {
      await tx`select sl_emit(${withoutHook.account_id}, null, 'test.before', '{}'::jsonb)`;
      const [r] = await tx<{ n: number }>`select sl_roll_over_children(now(), 500, true) as n`;
      const [c] = await tx<{ last: Date }>`select current_setting('sl.last_event_at')::timestamptz as last`;
      await tx`select sl_emit(${withoutHook.account_id}, null, 'test.after', '{}'::jsonb)`;
      return { rolled: r?.n ?? 0, carried: c?.last.getTime() };
    });
    expect(rolled).toBeGreaterThanOrEqual(order.length);

    const rows = await env.db<{ event: string; child_api_key_id: string | null; partner_account_id: string; delivery_status: string; body: string }>`
      select event, child_api_key_id, partner_account_id, delivery_status, body from events where seq > ${before?.seq ?? 0} order by seq`;
    const stamps = rows.map((r) => {
      const envelope = JSON.parse(r.body) as { event: string; timestamp: string; data: Json };
      expect(Object.keys(envelope).sort()).toEqual(['data', 'event', 'timestamp']);
      expect(envelope.event).toBe(r.event);
      expect(envelope.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      return Date.parse(envelope.timestamp);
    });
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]).toBeGreaterThan(stamps[i - 1] ?? Number.POSITIVE_INFINITY);
    expect(rows[0]?.event).toBe('test.before');
    expect(rows.at(-1)?.event).toBe('test.after');
    // The batch leaves its last timestamp where the next sl_emit of the transaction reads it.
    expect(carried).toBe(stamps.at(-2));

    const ours = rows.filter((r) => r.child_api_key_id !== null && order.includes(r.child_api_key_id));
    expect(ours.map((r) => [order.indexOf(r.child_api_key_id ?? ''), r.event])).toEqual([
      [0, 'child.period_rolled'],
      [0, 'child.reactivated'],
      [1, 'child.period_rolled'],
      [1, 'child.updated'],
      [2, 'child.period_rolled'],
      [3, 'child.period_rolled'],
    ]);
    for (const r of ours) {
      const hooked = r.child_api_key_id !== elsewhere;
      expect(r.partner_account_id).toBe(hooked ? withHook.account_id : withoutHook.account_id);
      expect(r.delivery_status).toBe(hooked ? 'pending' : 'no_destination');
    }
  });
});

describe('operator commands', () => {
  it('purchase-topup credits a pool once per payment reference and refuses ambiguous targets', async () => {
    const p = await seedPartner(env.deps, { quota: 0 });
    const flags = { 'account-id': p.account_id, amount: '25', 'payment-ref': 'inv-2026-11-0001' };
    expect(await runOperatorCommand(env.deps, 'purchase-topup', flags)).toEqual({ credited: true });
    expect(await runOperatorCommand(env.deps, 'purchase-topup', flags)).toEqual({ credited: false });
    expect(((await call(env, 'partner-pool-state', { key: p.key })).body.pool as Json).topup_balance).toBe(25);
    await expect(runOperatorCommand(env.deps, 'purchase-topup', { amount: '5' })).rejects.toThrow(/exactly one/);
    await expect(runOperatorCommand(env.deps, 'purchase-topup', { 'account-id': p.account_id, amount: '0' })).rejects.toThrow(/positive/);
  });

  it('record-invoice and settle-invoice gate child creation on monthly-invoice billing', async () => {
    const p = await seedPartner(env.deps, { quota: 10 });
    await runOperatorCommand(env.deps, 'set-billing', {
      'account-id': p.account_id,
      mode: 'invoice_monthly',
      'per-id-pence': '1.5',
      card: 'pm_visa',
    });
    const inv = (await runOperatorCommand(env.deps, 'record-invoice', { 'account-id': p.account_id, 'amount-pence': '1200' })) as {
      invoice_id: string;
    };
    const body = { name: 'x', domain: `inv-gate-${Date.now()}.example.com` };
    expect((await call(env, 'partner-create-child-key', { key: p.key, body })).status).toBe(409);
    expect(await runOperatorCommand(env.deps, 'settle-invoice', { 'invoice-id': inv.invoice_id })).toMatchObject({ status: 'paid' });
    expect((await call(env, 'partner-create-child-key', { key: p.key, body })).status).toBe(201);
    await expect(runOperatorCommand(env.deps, 'settle-invoice', { 'invoice-id': inv.invoice_id })).rejects.toThrow(/no outstanding invoice/);
  });

  it('consume and roll-over run the ledger verbs', async () => {
    const p = await seedPartner(env.deps, { quota: 100 });
    const c = await createChildVia(env, p.key, { monthly_id_quota: 2 });
    expect(await runOperatorCommand(env.deps, 'consume', { 'key-id': c.child.api_key_id, count: '3' })).toEqual({
      key_id: c.child.api_key_id,
      outcomes: { consumed: 2, suspended: 1 },
    });
    expect(await runOperatorCommand(env.deps, 'roll-over', {})).toMatchObject({ children: expect.any(Number) as unknown });
  });

  it('rejects unknown flags and commands with the usage', async () => {
    await expect(
      runOperatorCommand(env.deps, 'set-auto-reload', { 'account-id': '00000000-0000-4000-8000-000000000000', colour: 'x' }),
    ).rejects.toThrow(/colour/);
    await expect(runOperatorCommand(env.deps, 'frobnicate', {})).rejects.toThrow(/unknown command/);
  });
});

describe('scheduler', () => {
  it('never overlaps a job with itself and waits for a running job on stop', async () => {
    vi.useFakeTimers();
    try {
      let running = 0;
      let maxRunning = 0;
      let runs = 0;
      let release: () => void = () => {};
      const job = {
        name: 'slow',
        everyMs: 1000,
        run: async () => {
          running++;
          runs++;
          maxRunning = Math.max(maxRunning, running);
          await new Promise<void>((r) => (release = r));
          running--;
        },
      };
      const s = startScheduler([job], silentLogger, 10);
      await vi.advanceTimersByTimeAsync(5_000);
      expect(runs).toBe(1);
      expect(maxRunning).toBe(1);
      release();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(runs).toBe(2);
      const stopped = s.stop();
      release();
      await stopped;
      await vi.advanceTimersByTimeAsync(5_000);
      expect(runs).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('fixes found by the concurrency review', () => {
  it('gives events of one transaction strictly increasing timestamps (period_rolled before reactivated)', async () => {
    const p = await seedPartner(env.deps, { quota: 100 });
    const c = await createChildVia(env, p.key, { monthly_id_quota: 1 });
    await consume(c.child.api_key_id);
    await env.db`update child_subscriptions set current_period_end = now() - interval '1 minute', current_period_start = now() - interval '31 days'
                 where api_key_id = ${c.child.api_key_id}`;
    await rollOverDuePeriods({ ctx: env.deps, input: {} });
    const rows = await env.db<{ body: string; seq: number }>`
      select body, seq::int as seq from events where child_api_key_id = ${c.child.api_key_id} order by seq`;
    const events = rows.map((r) => JSON.parse(r.body) as { event: string; timestamp: string });
    expect(events.map((e) => e.event)).toEqual(['child.created', 'child.suspended', 'child.period_rolled', 'child.reactivated']);
    const rolled = events[2]?.timestamp ?? '';
    const reactivated = events[3]?.timestamp ?? '';
    expect(Date.parse(reactivated)).toBeGreaterThan(Date.parse(rolled));
  });

  it('spends a child’s own top-up when its prepaid pool cannot fund a quota ID', async () => {
    const p = await seedPartner(env.deps, { quota: 5, topup: 2 });
    const c = await createChildVia(env, p.key, { monthly_id_quota: 10 });
    await call(env, 'partner-transfer-topup', { key: p.key, body: { child_api_key_id: c.child.api_key_id, amount: 2 } });
    await env.db`update pools set ids_used_this_period = monthly_id_quota where account_id = ${p.account_id}`;
    expect(await consume(c.child.api_key_id)).toEqual({ outcome: 'consumed', child_source: 'topup', pool_source: null });
    expect(await consume(c.child.api_key_id)).toEqual({ outcome: 'consumed', child_source: 'topup', pool_source: null });
    expect((await consume(c.child.api_key_id)).outcome).toBe('pool_exhausted');
    const [k] = await env.db<{ status: string }>`select status from api_keys where id = ${c.child.api_key_id}`;
    expect(k?.status).toBe('active');
  });

  it('waits for a child that a consumer holds instead of leaving it for the next sweep', async () => {
    const p = await seedPartner(env.deps, { quota: 100 });
    const c = await createChildVia(env, p.key, { monthly_id_quota: 3 });
    await env.db`update child_subscriptions set current_period_end = now() - interval '1 minute', current_period_start = now() - interval '31 days'
                 where api_key_id = ${c.child.api_key_id}`;
    let locked: () => void = () => {};
    const hasLock = new Promise<void>((r) => (locked = r));
    const holder = env.db.begin(async (tx) => {
      await tx`select 1 from child_subscriptions where api_key_id = ${c.child.api_key_id} for update`;
      locked();
      await new Promise((r) => setTimeout(r, 300));
    });
    await hasLock;
    const result = await rollOverDuePeriods({ ctx: env.deps, input: {} });
    await holder;
    expect(result.children).toBeGreaterThanOrEqual(1);
    const [s] = await env.db<{ due: boolean }>`
      select current_period_end <= now() as due from child_subscriptions where api_key_id = ${c.child.api_key_id}`;
    expect(s?.due).toBe(false);
  });
});
