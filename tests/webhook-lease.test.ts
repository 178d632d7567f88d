/**
 * A live sender never loses its claim (issue 10 item 4, migration 0008).
 *
 * Two replicas — two independent senders, each with its own dependencies and HTTP transport (and,
 * with DATABASE_URL set, its own connection pool on the real server) — sweep or dispatch the same
 * database at once against a slow receiver on 127.0.0.1. Time is scaled down: a 2.9 s lease instead
 * of 60 s, a receiver that takes 1 s. The receiver counts what it got, by body (each event's stored
 * bytes are unique), and must have got every event exactly once.
 *
 * Without DATABASE_URL both replicas share one PGlite, where statements serialise; the HTTP sends
 * still overlap, which is what lets a lease run out under a live sender.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CoreDeps,
  DELIVERY_LEASE,
  type DeliveryLease,
  dispatchNewEvents,
  mintWebhookSecret,
  type Row,
  type Sql,
  type SqlValue,
  sweepWebhookDeliveries,
  WEBHOOK_CONNECTION_WAIT_MS,
  type WebhookTransport,
} from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, replicaEnv, type TestEnv } from './support/app.ts';
import { startReceiver } from './support/receiver.ts';

/**
 * A 2.9 s lease. With a 1.8 s receiver timeout an attempt may take 2 s, so a claim is one round of 64
 * events, and the first send of a batch needs 2.2 s of lease left (0.7 s for the claim itself).
 */
const LEASE: DeliveryLease = { leaseMs: 2_900, attemptSlackMs: 200, marginMs: 200 };
const TIMEOUT_MS = 1_800;
/**
 * Longer than a third of the lease, so the old claims (200 first attempts, 500 in a sweep, sent 64 at
 * a time) could not finish inside it; 0.8 s inside the timeout, so a busy machine does not turn a
 * slow answer into a failed attempt.
 */
const RECEIVER_DELAY_MS = 1_000;

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv({ webhookTimeoutMs: TIMEOUT_MS });
});
const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await env.close();
});

/** Another replica of the service: its own transport, keyring and (on Postgres) connection pool. */
async function otherReplica(webhookTimeoutMs = TIMEOUT_MS): Promise<CoreDeps> {
  const replica = await replicaEnv(env, { webhookTimeoutMs });
  closers.push(replica.close);
  return replica.deps;
}

/** A receiver on 127.0.0.1 that answers every POST with 200 after `delayMs`. */
async function slowReceiver(delayMs: number) {
  const r = await startReceiver((req, res) => {
    if (req.method !== 'POST') return void res.end();
    setTimeout(() => res.end('ok'), delayMs);
  });
  closers.push(r.close);
  return r;
}
type Receiver = Awaited<ReturnType<typeof slowReceiver>>;

/** A partner whose webhook is `url`, with `n` pending events emitted and not yet dispatched. */
async function partnerWithEvents(url: string, n: number): Promise<string> {
  const sealed = await env.deps.keyring.seal(mintWebhookSecret());
  const [a] = await env.db<{ id: string }>`
    insert into accounts (name, is_partner, partner_webhook_url, partner_webhook_secret_sealed)
    values ('Lease partner', true, ${url}, ${sealed}) returning id`;
  const id = a?.id ?? '';
  await env.db`select sl_emit(${id}, null, 'child.updated', jsonb_build_object('n', g)) from generate_series(1, ${n}) g`;
  return id;
}

const TIMED_OUT = 'no answer within the timeout';

/**
 * What the receiver got for the partner's events, counted at the receiver, and how each ended. An
 * event is settled once an attempt is recorded: delivered, or failed because the receiver's answer
 * came after the timeout. A loaded machine (the whole suite on two cores) can delay the answer of a
 * receiver that lives in this process past the scaled-down timeout; that attempt is then retried a
 * minute later, as at-least-once delivery requires, which these tests do not wait for. What they
 * guard is that no live sender sends an event another has claimed: every event reaches the receiver
 * exactly once, and no other error occurs.
 */
async function receivedOnce(r: Receiver, partner: string) {
  const events = await env.db<{ body: string; delivery_status: string; last_error: string | null }>`
    select body, delivery_status, last_error from events where partner_account_id = ${partner}`;
  const times = new Map<string, number>();
  for (const p of r.received) if (p.method === 'POST') times.set(p.body, (times.get(p.body) ?? 0) + 1);
  const counts = events.map((e) => times.get(e.body) ?? 0);
  return {
    events: events.length,
    never: counts.filter((n) => n === 0).length,
    more_than_once: counts.filter((n) => n > 1).length,
    settled: events.filter((e) => e.delivery_status === 'delivered' || e.last_error === TIMED_OUT).length,
    // Empty when all is well; otherwise says why an event is still pending.
    other_errors: [...new Set(events.map((e) => e.last_error).filter((x) => x !== null && x !== TIMED_OUT))],
  };
}

const unsettled = async (partner: string) =>
  (
    await env.db<{ n: number }>`
    select count(*)::int as n from events where partner_account_id = ${partner}
      -- is not distinct from: a pending event's last_error is null, and \`null = …\` would leave it uncounted.
      and not (delivery_status = 'delivered' or (last_error is not distinct from ${TIMED_OUT} and lease_until is null))`
  )[0]?.n ?? 0;

/** A replica's scheduler, compressed: runs `pass` back to back until every one of the partner's events is settled. */
async function keepRunning(partner: string, pass: () => Promise<unknown>, withinMs = 40_000): Promise<void> {
  const until = Date.now() + withinMs;
  while (Date.now() < until) {
    await pass();
    if ((await unsettled(partner)) === 0) return;
    await sleep(20);
  }
}

/** Waits until some sender holds `n` of the partner's events. */
async function untilLeased(partner: string, n: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const [row] = await env.db<{ n: number }>`
      select count(*)::int as n from events where partner_account_id = ${partner} and lease_until is not null`;
    if ((row?.n ?? 0) >= n) return;
    await sleep(10);
  }
  throw new Error(`never saw ${n} leased events`);
}

/** A transport that waits `ms` for a connection before the receiver's timer starts, as a busy pool does. */
function queuedTransport(inner: WebhookTransport, ms: number): WebhookTransport {
  return {
    async request(url, init) {
      if (init.method === 'POST') await sleep(ms);
      return inner.request(url, init);
    },
  };
}

/** The same database, except that every lease renewal fails (an unreachable or overloaded database). */
function renewalsFail(db: Sql): Sql {
  const query = <T extends object = Row>(strings: TemplateStringsArray, ...values: SqlValue[]): Promise<T[]> =>
    strings.join('?').includes('sl_renew_deliveries') ? Promise.reject(new Error('renewal refused by the test')) : db<T>(strings, ...values);
  return Object.assign(query, { begin: <T>(fn: (tx: Sql) => Promise<T>) => db.begin(fn), cursor: db.cursor });
}

describe('a live sender never loses its claim', { timeout: 60_000 }, () => {
  it('two replicas sweeping 320 events through a slow receiver: each is received exactly once, and all end settled', async () => {
    const r = await slowReceiver(RECEIVER_DELAY_MS);
    const partner = await partnerWithEvents(r.url, 320);
    const a = env.deps;
    const b = await otherReplica();
    await Promise.all([
      keepRunning(partner, () => sweepWebhookDeliveries({ ctx: a, input: { lease: LEASE } })),
      keepRunning(partner, () => sweepWebhookDeliveries({ ctx: b, input: { lease: LEASE } })),
    ]);
    expect(await receivedOnce(r, partner)).toEqual({ events: 320, never: 0, more_than_once: 0, settled: 320, other_errors: [] });
  });

  it('two replicas dispatching first attempts for the same partner: each is received exactly once', async () => {
    const r = await slowReceiver(RECEIVER_DELAY_MS);
    const partner = await partnerWithEvents(r.url, 320);
    const a = env.deps;
    const b = await otherReplica();
    await Promise.all([
      keepRunning(partner, () => dispatchNewEvents({ ctx: a, input: { partnerAccountId: partner, lease: LEASE } })),
      keepRunning(partner, () => dispatchNewEvents({ ctx: b, input: { partnerAccountId: partner, lease: LEASE } })),
    ]);
    expect(await receivedOnce(r, partner)).toEqual({ events: 320, never: 0, more_than_once: 0, settled: 320, other_errors: [] });
  });

  it('a sender whose attempts outlast the lease keeps its claim: the lease is renewed while it sends', async () => {
    const r = await slowReceiver(0);
    const partner = await partnerWithEvents(r.url, 10);
    // 3.5 s waiting for a connection, outside the receiver's timeout: longer than the whole lease.
    const a: CoreDeps = { ...env.deps, webhooks: queuedTransport(env.deps.webhooks, 3_500) };
    const b = await otherReplica();
    const first = sweepWebhookDeliveries({ ctx: a, input: { lease: LEASE } });
    await untilLeased(partner, 10);
    await Promise.all([first, keepRunning(partner, () => sweepWebhookDeliveries({ ctx: b, input: { lease: LEASE } }))]);
    expect(await receivedOnce(r, partner)).toEqual({ events: 10, never: 0, more_than_once: 0, settled: 10, other_errors: [] });
  });

  it('a sender that cannot renew gives queued events back unsent instead of sending them late, and no attempt is counted', async () => {
    const r = await slowReceiver(0);
    const partner = await partnerWithEvents(r.url, 128);
    // A 2 s timeout makes an attempt 3 s, so two rounds (128 events) fit in a 7.5 s claim with its
    // 1 s margin; but each attempt waits 4.6 s in the transport, so when the second round is due
    // only ~2.9 s of the lease is left (less than an attempt and its margin: 4 s), and no renewal
    // has landed. The first round still finishes ~2.9 s inside the lease, room enough for a machine
    // busy with the whole suite.
    const lease: DeliveryLease = { leaseMs: 7_500, attemptSlackMs: 1_000, marginMs: 1_000 };
    const a: CoreDeps = {
      ...env.deps,
      db: renewalsFail(env.deps.db),
      webhookTimeoutMs: 2_000,
      webhooks: queuedTransport(env.deps.webhooks, 4_600),
    };
    const b = await otherReplica(2_000);
    const first = sweepWebhookDeliveries({ ctx: a, input: { lease, maxBatches: 1 } });
    await untilLeased(partner, 128);
    const [report] = await Promise.all([first, keepRunning(partner, () => sweepWebhookDeliveries({ ctx: b, input: { lease } }))]);
    expect(await receivedOnce(r, partner)).toEqual({ events: 128, never: 0, more_than_once: 0, settled: 128, other_errors: [] });
    expect(report).toMatchObject({ claimed: 128, released: 64 });
    expect(report.delivered + report.failed).toBe(64);
    // The released events were delivered on their first attempt: giving one back counted nothing.
    const [log] = await env.db<{ attempts: number; rows: number }>`
      select max(e.attempts)::int as attempts, (select count(*)::int from webhook_attempts w
        where w.event_id in (select id from events where partner_account_id = ${partner})) as rows
      from events e where e.partner_account_id = ${partner}`;
    expect(log).toEqual({ attempts: 1, rows: 128 });
  });

  it('a sweep claims no more than it can send within the lease: 64 × floor((60 s − 5 s) / (10 s + 30 s + 5 s)) = 64', async () => {
    const r = await slowReceiver(0);
    await partnerWithEvents(r.url, 200);
    const production: CoreDeps = { ...env.deps, webhookTimeoutMs: 10_000 };
    // The slack covers the transport's own bound on waiting for a connection (30 s) plus 5 s.
    expect(DELIVERY_LEASE).toEqual({ leaseMs: 60_000, attemptSlackMs: WEBHOOK_CONNECTION_WAIT_MS + 5_000, marginMs: 5_000 });
    expect((await sweepWebhookDeliveries({ ctx: production, input: { maxBatches: 1 } })).claimed).toBe(64);
    expect((await sweepWebhookDeliveries({ ctx: production, input: {} })).claimed).toBe(136);
  });
});

describe('only the lease holder may renew, release or record (migration 0008)', () => {
  async function oneEvent() {
    const r = await slowReceiver(0);
    const partner = await partnerWithEvents(r.url, 1);
    const claim = async (owner: string, leaseMs: number) =>
      env.db<{ event_id: string; attempt: number }>`
        select event_id, attempt from sl_claim_deliveries(${owner}::uuid, null, 10, ${partner}::uuid, true, 5, ${leaseMs})`;
    return { partner, claim };
  }
  const first = '00000000-0000-4000-8000-00000000000a';
  const second = '00000000-0000-4000-8000-00000000000b';

  it('an attempt recorded by a sender whose lease was taken over changes nothing; the new owner’s record counts', async () => {
    const { claim } = await oneEvent();
    const [c] = await claim(first, 50);
    const id = c?.event_id ?? '';
    expect(await claim(second, 60_000)).toEqual([]); // still leased
    await sleep(100);
    expect(await claim(second, 60_000)).toEqual([{ event_id: id, attempt: 1 }]);

    const record = async (owner: string, status: number) =>
      (await env.db<{ s: string | null }>`select sl_record_delivery(${id}, 1, ${owner}::uuid, null, ${status}, null, 5) as s`)[0]?.s;
    expect(await record(first, 500)).toBeNull();
    const [row] = await env.db<{ attempts: number; lease_owner: string | null; finished_at: Date | null }>`
      select e.attempts, e.lease_owner, w.finished_at from events e join webhook_attempts w on w.event_id = e.id and w.attempt = 1
      where e.id = ${id}`;
    expect(row).toEqual({ attempts: 0, lease_owner: second, finished_at: null });
    expect(await record(second, 200)).toBe('delivered');
    expect(await record(second, 200)).toBeNull(); // idempotent
  });

  it('renewal and release touch only what the caller still owns; a release counts no attempt', async () => {
    const { claim } = await oneEvent();
    const [c] = await claim(first, 60_000);
    const id = c?.event_id ?? '';
    expect(await env.db`select event_id from sl_renew_deliveries(${second}::uuid, 60000)`).toEqual([]);
    expect(await env.db`select event_id from sl_renew_deliveries(${first}::uuid, 60000)`).toEqual([{ event_id: id }]);
    expect(await env.db`select sl_release_deliveries(${second}::uuid, ${`{${id}}`}::uuid[]) as n`).toEqual([{ n: 0 }]);
    expect(await env.db`select sl_release_deliveries(${first}::uuid, ${`{${id}}`}::uuid[]) as n`).toEqual([{ n: 1 }]);
    const [row] = await env.db<{ attempts: number; lease_until: Date | null; logged: number }>`
      select attempts, lease_until, (select count(*)::int from webhook_attempts where event_id = ${id}) as logged
      from events where id = ${id}`;
    expect(row).toEqual({ attempts: 0, lease_until: null, logged: 0 });
    // Given back, it is claimable at once.
    expect(await claim(second, 60_000)).toEqual([{ event_id: id, attempt: 1 }]);
  });
});

describe('many attempts recorded in one statement (migration 0019)', () => {
  const first = '00000000-0000-4000-8000-00000000001a';
  const second = '00000000-0000-4000-8000-00000000001b';

  it('counts each attempt only for the owner that still holds its lease, once, with the same rules as one record', async () => {
    const r = await slowReceiver(0);
    const partner = await partnerWithEvents(r.url, 3);
    const claim = async (owner: string, limit: number, leaseMs: number) =>
      (
        await env.db<{ event_id: string }>`
        select event_id from sl_claim_deliveries(${owner}::uuid, null, ${limit}, ${partner}::uuid, true, 5, ${leaseMs})`
      ).map((c) => c.event_id);
    const [e1, e2] = await claim(first, 2, 50);
    await sleep(100);
    // The first owner's leases ran out; the second takes over the earliest event only.
    expect(await claim(second, 1, 60_000)).toEqual([e1]);
    const [, , e3] = (await env.db<{ id: string }>`select id from events where partner_account_id = ${partner} order by seq`).map((x) => x.id);
    /** Each event's delivery_status after the record, or null where nothing was recorded. */
    const record = async (attempts: Array<{ event_id: string | undefined; owner: string; status_code: number }>) =>
      Object.fromEntries(
        (
          await env.db<{ event_id: string; delivery_status: string | null }>`
          select event_id, delivery_status from sl_record_deliveries(null, ${JSON.stringify(
            attempts.map((a) => ({ ...a, attempt: 1, error: a.status_code === 200 ? null : `HTTP ${a.status_code}`, duration_ms: 5 })),
          )}::text::jsonb)`
        ).map((x) => [x.event_id, x.delivery_status]),
      );

    // e1 was taken over: the first owner's record of it is refused. e2's lease ran out but nobody took
    // it: still the first owner's, and its failed attempt counts.
    expect(
      await record([
        { event_id: e1, owner: first, status_code: 200 },
        { event_id: e2, owner: first, status_code: 500 },
      ]),
    ).toEqual({ [`${e1}`]: null, [`${e2}`]: 'pending' });
    // e3 was never claimed: nobody's to record.
    const ours = [
      { event_id: e1, owner: second, status_code: 200 },
      { event_id: e3, owner: second, status_code: 200 },
    ];
    expect(await record(ours)).toEqual({ [`${e1}`]: 'delivered', [`${e3}`]: null });
    // Recorded already: a second record of the same attempts changes nothing.
    expect(await record(ours)).toEqual({ [`${e1}`]: null, [`${e3}`]: null });

    const rows = await env.db<{ id: string; delivery_status: string; attempts: number; retry_in_s: number | null; logged: string | null }>`
      select e.id, e.delivery_status, e.attempts, extract(epoch from e.next_attempt_at - e.last_attempt_at)::int as retry_in_s,
             (select w.status_code || ' ' || w.succeeded from webhook_attempts w where w.event_id = e.id and w.attempt = 1 and w.finished_at is not null) as logged
      from events e where e.partner_account_id = ${partner} order by e.seq`;
    expect(rows).toEqual([
      { id: e1, delivery_status: 'delivered', attempts: 1, retry_in_s: null, logged: '200 true' },
      { id: e2, delivery_status: 'pending', attempts: 1, retry_in_s: 60, logged: '500 false' },
      { id: e3, delivery_status: 'pending', attempts: 0, retry_in_s: null, logged: null },
    ]);
  });
});
