import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { dispatchNewEvents, sweepWebhookDeliveries } from '@sightline/core';
import { verifyWebhook } from '@sightline/webhook-verify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { type ReceivedRequest, startReceiver } from './support/receiver.ts';
import { createChildVia, seedPartner } from './support/seed.ts';

const exec = promisify(execFile);
const MINUTE = 60_000;

let env: TestEnv;
beforeAll(async () => {
  // A short receiver timeout keeps the slow-receiver cases fast; the engine reads it from deps.
  env = await createTestEnv({ webhookTimeoutMs: 400 });
});
afterAll(() => env.close());

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
const receivers: Receiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close().catch(() => undefined)));
});

/** A receiver whose POST behaviour is `onPost`; HEAD (the reachability check) always answers. */
async function receiver(onPost: (req: ReceivedRequest, res: import('node:http').ServerResponse, n: number) => void) {
  let posts = 0;
  const r = await startReceiver((req, res) => {
    if (req.method !== 'POST') return void res.end();
    onPost(req, res, ++posts);
  });
  receivers.push(r);
  return r;
}
const posts = (r: Receiver) => r.received.filter((x) => x.method === 'POST');

async function partnerWithWebhook(url: string) {
  const p = await seedPartner(env.deps, { quota: 1000, topup: 100 });
  const res = await call(env, 'partner-set-webhook', { key: p.key, body: { url } });
  expect(res.status).toBe(200);
  return { ...p, secret: res.body.partner_webhook_secret as string };
}

async function eventRow(id: string) {
  const [row] = await env.db<{ delivery_status: string; attempts: number; next_attempt_at: Date | null; body: string; last_error: string | null }>`
    select delivery_status, attempts, next_attempt_at, body, last_error from events where id = ${id}`;
  return row;
}
async function lastEventOf(childId: string, name: string) {
  const [row] = await env.db<{ id: string }>`
    select id from events where child_api_key_id = ${childId} and event = ${name} order by seq desc limit 1`;
  return row?.id ?? '';
}

describe('signed delivery', () => {
  it('delivers child.created right after the action, signed over the stored body bytes', async () => {
    const r = await receiver((_q, res) => res.end('ok'));
    const p = await partnerWithWebhook(r.url);
    const c = await createChildVia(env, p.key, { name: 'Signed' });
    await env.settle();
    const [delivery] = posts(r);
    expect(delivery).toBeDefined();
    const h = delivery?.headers ?? {};
    expect(h['x-service-event']).toBe('child.created');
    expect(h['content-type']).toBe('application/json');
    expect(h['x-service-timestamp']).toMatch(/^\d{13}$/);
    expect(Math.abs(Number(h['x-service-timestamp']) - Date.now())).toBeLessThan(30_000);
    const id = await lastEventOf(c.child.api_key_id, 'child.created');
    const row = await eventRow(id);
    expect(delivery?.body).toBe(row?.body);
    expect(row?.delivery_status).toBe('delivered');
    const verified = await verifyWebhook(delivery?.body ?? '', h as Record<string, string>, [p.secret]);
    expect(verified).toMatchObject({ event: 'child.created', data: { child_api_key_id: c.child.api_key_id, name: 'Signed' } });
  });

  it('signatures verify with an independent implementation (python3 hmac)', async () => {
    const r = await receiver((_q, res) => res.end());
    const p = await partnerWithWebhook(r.url);
    await createChildVia(env, p.key);
    await env.settle();
    const [d] = posts(r);
    const script =
      'import hmac,hashlib,sys; print(hmac.new(sys.argv[1].encode(), (sys.argv[2] + "." + sys.stdin.read()).encode(), hashlib.sha256).hexdigest())';
    const child = exec('python3', ['-c', script, p.secret, String(d?.headers['x-service-timestamp'])]);
    child.child.stdin?.end(d?.body ?? '');
    const { stdout } = await child;
    expect(stdout.trim()).toBe(d?.headers['x-service-signature']);
  });

  it('never delays the action: a hanging receiver leaves the response time alone', async () => {
    const r = await receiver(() => {
      /* never answers */
    });
    const p = await partnerWithWebhook(r.url);
    const res = await call(env, 'partner-create-child-key', { key: p.key, body: { name: 'Fast', domain: `fast-${Date.now()}.example.com` } });
    expect(res.status).toBe(201);
    // The response is here while the delivery is still unanswered: nothing recorded yet.
    const id = await lastEventOf((res.body.child as Json).api_key_id as string, 'child.created');
    expect(await eventRow(id)).toMatchObject({ delivery_status: 'pending', attempts: 0 });
    await env.settle();
    expect(await eventRow(id)).toMatchObject({ delivery_status: 'pending', attempts: 1, last_error: 'no answer within the timeout' });
  });
});

describe('failed attempts and retries', () => {
  it('retries a 500 after a minute, with the identical body, and then succeeds', async () => {
    const r = await receiver((_q, res, n) => {
      res.statusCode = n === 1 ? 500 : 200;
      res.end();
    });
    const p = await partnerWithWebhook(r.url);
    const c = await createChildVia(env, p.key);
    await env.settle();
    const id = await lastEventOf(c.child.api_key_id, 'child.created');
    const first = await eventRow(id);
    expect(first).toMatchObject({ delivery_status: 'pending', attempts: 1, last_error: 'HTTP 500' });
    const due = new Date(first?.next_attempt_at ?? 0).getTime();
    // Not yet due 59 s later. Judged on this event and its receiver, not on the sweep's claimed count:
    // an earlier test's unanswered delivery (its own minute already up) may rightly be claimed here.
    await sweepWebhookDeliveries({ ctx: env.deps, input: { now: new Date(due - 1000) } });
    expect(await eventRow(id)).toMatchObject({ delivery_status: 'pending', attempts: 1 });
    expect(posts(r)).toHaveLength(1);
    await sweepWebhookDeliveries({ ctx: env.deps, input: { now: new Date(due) } });
    expect(await eventRow(id)).toMatchObject({ delivery_status: 'delivered', attempts: 2 });
    const [a, b] = posts(r);
    expect(b?.body).toBe(a?.body);
    expect(b?.headers['x-service-signature']).toBeDefined();
  });

  it.each([
    ['a receiver slower than the timeout', 'slow' as const, /no answer within the timeout/],
    ['a connection reset', 'reset' as const, /socket|reset|closed|terminated|other side/i],
    ['a redirect (never followed, even to a private address)', 'redirect' as const, /HTTP 302/],
  ])('counts %s as a failed attempt', async (_l, mode, error) => {
    const r = await receiver((req, res) => {
      if (mode === 'slow') return void setTimeout(() => res.end(), 1500);
      if (mode === 'reset') return void res.socket?.destroy();
      res.statusCode = 302;
      res.setHeader('location', 'http://169.254.169.254/latest/meta-data/');
      res.end();
      void req;
    });
    const p = await partnerWithWebhook(r.url);
    const c = await createChildVia(env, p.key);
    await env.settle();
    const row = await eventRow(await lastEventOf(c.child.api_key_id, 'child.created'));
    expect(row).toMatchObject({ delivery_status: 'pending', attempts: 1 });
    expect(row?.last_error).toMatch(error);
    expect(posts(r)).toHaveLength(1);
  });

  it('a receiver down for the whole schedule: 4 attempts at +1, +5 and +30 minutes, then failed for good', async () => {
    const r = await receiver((_q, res) => res.end());
    const p = await partnerWithWebhook(r.url);
    await r.close(); // down from now on
    const c = await createChildVia(env, p.key);
    await env.settle();
    const id = await lastEventOf(c.child.api_key_id, 'child.created');
    const attemptsAt: number[] = [];
    let row = await eventRow(id);
    expect(row).toMatchObject({ attempts: 1, delivery_status: 'pending' });
    const [first] = await env.db<{ t: Date }>`select last_attempt_at as t from events where id = ${id}`;
    attemptsAt.push(new Date(first?.t ?? 0).getTime());
    for (let i = 0; i < 3; i++) {
      const due = new Date(row?.next_attempt_at ?? 0).getTime();
      await sweepWebhookDeliveries({ ctx: env.deps, input: { now: new Date(due) } });
      attemptsAt.push(due);
      row = await eventRow(id);
    }
    expect(row).toMatchObject({ attempts: 4, delivery_status: 'failed', next_attempt_at: null });
    const gaps = attemptsAt.slice(1).map((t, i) => Math.round((t - (attemptsAt[i] ?? 0)) / MINUTE));
    expect(gaps).toEqual([1, 5, 30]);
    const dayLater = new Date((attemptsAt.at(-1) ?? 0) + 24 * 60 * MINUTE);
    expect((await sweepWebhookDeliveries({ ctx: env.deps, input: { now: dayLater } })).claimed).toBe(0);
    const [log] = await env.db<{ n: number }>`select count(*)::int as n from webhook_attempts where event_id = ${id}`;
    expect(log?.n).toBe(4);
  });

  it('retries at most 5 events per URL per minute; deferred retries keep their attempt', async () => {
    const r = await receiver((_q, res) => {
      res.statusCode = 503;
      res.end();
    });
    const p = await partnerWithWebhook(r.url);
    const kids = [];
    for (let i = 0; i < 20; i++) kids.push(await createChildVia(env, p.key, { name: `k${i}` }));
    await env.settle();
    const ids = await Promise.all(kids.map((k) => lastEventOf(k.child.api_key_id, 'child.created')));
    const rows = await Promise.all(ids.map(eventRow));
    expect(rows.every((x) => x?.attempts === 1)).toBe(true);
    const latestDue = Math.max(...rows.map((x) => new Date(x?.next_attempt_at ?? 0).getTime()));
    const t0 = latestDue + 1000;
    const firstMinute = await sweepWebhookDeliveries({ ctx: env.deps, input: { now: new Date(t0) } });
    expect(firstMinute.claimed).toBe(5);
    // Same minute again: the cap is used up.
    expect((await sweepWebhookDeliveries({ ctx: env.deps, input: { now: new Date(t0 + 30_000) } })).claimed).toBe(0);
    const after = await Promise.all(ids.map(eventRow));
    expect(after.filter((x) => x?.attempts === 2)).toHaveLength(5);
    expect(after.filter((x) => x?.attempts === 1)).toHaveLength(15);
    // The next minute lets five more through.
    expect((await sweepWebhookDeliveries({ ctx: env.deps, input: { now: new Date(t0 + MINUTE + 1000) } })).claimed).toBe(5);
  });

  it('a crash between sending and recording leads to a redelivery, never a loss', async () => {
    const r = await receiver((_q, res) => res.end());
    const p = await partnerWithWebhook(r.url);
    await env.db`update accounts set partner_webhook_url = ${r.url} where id = ${p.account_id}`;
    // Emit without dispatching, then play a sender that claims (a 2.5 s lease, so the test need not
    // wait a minute), sends and dies before recording.
    await env.db`select sl_emit(${p.account_id}, null, 'child.updated', '{"probe": 1}'::jsonb)`;
    // One millisecond ahead: the event's due time has microseconds and a Date truncates to the
    // millisecond, so "now" read within the same millisecond as the emit could be before it.
    const now = new Date(Date.now() + 1);
    const LEASE_MS = 2_500;
    const claimed = await env.db<{ event_id: string; body: string; url: string }>`
      select * from sl_claim_deliveries(gen_random_uuid(), ${now.toISOString()}::timestamptz, 10, ${p.account_id}::uuid, true, 5, ${LEASE_MS})`;
    expect(claimed).toHaveLength(1);
    await fetch(claimed[0]?.url ?? '', { method: 'POST', body: claimed[0]?.body });
    // While the lease holds, nobody else sends it, whatever the schedule's clock says: leases run on
    // the database's clock.
    expect((await sweepWebhookDeliveries({ ctx: env.deps, input: { now: new Date(now.getTime() + 30_000) } })).claimed).toBe(0);
    // After it lapses, the sweep delivers it again with the same attempt number.
    await sleep(Math.max(0, now.getTime() + LEASE_MS + 100 - Date.now()));
    await sweepWebhookDeliveries({ ctx: env.deps, input: { now: new Date(now.getTime() + 61_000) } });
    const row = await eventRow(claimed[0]?.event_id ?? '');
    expect(row).toMatchObject({ delivery_status: 'delivered', attempts: 1 });
    const bodies = posts(r).map((x) => x.body);
    expect(bodies.filter((b) => b === row?.body)).toHaveLength(2);
  });

  it('events whose webhook was removed after they were emitted are settled as no_destination when they come up, and never sent', async () => {
    const r = await receiver((_q, res) => res.end());
    const childHook = await receiver((_q, res) => res.end());
    const p = await partnerWithWebhook(r.url);
    const c = await createChildVia(env, p.key, { webhook_url: childHook.url, webhook_secret: 'child-secret-123' });
    await env.settle();
    const sentBefore = posts(r).length;
    // More than one claim's worth (64) of the partner's own events, then one for the child's webhook.
    await env.db`select sl_emit(${p.account_id}, null, 'child.updated', jsonb_build_object('n', g)) from generate_series(1, 70) g`;
    await env.db`select sl_emit(${p.account_id}, ${c.child.api_key_id}, 'visitor_identified', '{"n": 71}'::jsonb, 'child')`;
    // As partner-set-webhook with a null URL does, without the dispatch that follows every partner call.
    await env.db`update accounts set partner_webhook_url = null, partner_webhook_secret_sealed = null where id = ${p.account_id}`;
    // The claim settles the 70 as it takes them, and takes the child's event in their place.
    const report = await dispatchNewEvents({ ctx: env.deps, input: { partnerAccountId: p.account_id } });
    expect(report).toMatchObject({ claimed: 1, delivered: 1 });
    const rows = await env.db<{ event: string; delivery_status: string; n: number }>`
      select event, delivery_status, count(*)::int as n from events
      where partner_account_id = ${p.account_id} and event in ('child.updated', 'visitor_identified') group by 1, 2 order by 1`;
    expect(rows).toEqual([
      { event: 'child.updated', delivery_status: 'no_destination', n: 70 },
      { event: 'visitor_identified', delivery_status: 'delivered', n: 1 },
    ]);
    expect(posts(r)).toHaveLength(sentBefore);
    expect(posts(childHook).map((x) => JSON.parse(x.body).data)).toEqual([{ n: 71 }]);
  });

  it('events emitted while the partner has no webhook are never sent', async () => {
    const p = await seedPartner(env.deps, { quota: 100 });
    const c = await createChildVia(env, p.key);
    await env.settle();
    expect(await eventRow(await lastEventOf(c.child.api_key_id, 'child.created'))).toMatchObject({ delivery_status: 'no_destination', attempts: 0 });
  });
});

describe('per-child visitor_identified', () => {
  it('goes to the child’s own webhook, signed with the child’s secret', async () => {
    const r = await receiver((_q, res) => res.end());
    const p = await seedPartner(env.deps, { quota: 100 });
    const c = await createChildVia(env, p.key, { webhook_url: r.url, webhook_secret: 'child-secret-123' });
    // The create's own background dispatch must be done first, or it may claim the event below
    // while the sweep finds nothing left to send.
    await env.settle();
    await env.db`select sl_emit(${p.account_id}, ${c.child.api_key_id}, 'visitor_identified', '{"visitor": {"ip": "203.0.113.9"}}'::jsonb, 'child')`;
    await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
    const [d] = posts(r);
    const verified = await verifyWebhook(d?.body ?? '', d?.headers as Record<string, string>, 'child-secret-123');
    expect(verified).toMatchObject({ event: 'visitor_identified', data: { visitor: { ip: '203.0.113.9' } } });
  });
});

describe('partner-list-events and partner-replay-event (additions to the spec)', () => {
  it('lists recent events with delivery status and attempts, filters, and replays one with the same body', async () => {
    let fail = true;
    const r = await receiver((_q, res) => {
      res.statusCode = fail ? 500 : 200;
      res.end();
    });
    const p = await partnerWithWebhook(r.url);
    const c = await createChildVia(env, p.key, { name: 'Listed' });
    await call(env, 'partner-update-child', { key: p.key, body: { child_api_key_id: c.child.api_key_id, name: 'Renamed' } });
    await env.settle();
    const list = await call(env, 'partner-list-events', { key: p.key, query: { child_api_key_id: c.child.api_key_id } });
    expect(list.status).toBe(200);
    const events = list.body.events as Json[];
    expect(events.map((e) => e.event)).toEqual(['child.updated', 'child.created']);
    expect(events[1]).toMatchObject({ delivery_status: 'pending', attempts: 1, last_error: 'HTTP 500', child_api_key_id: c.child.api_key_id });
    expect((events[1]?.payload as Json | undefined)?.event).toBe('child.created');
    const filtered = await call(env, 'partner-list-events', { key: p.key, query: { event: 'child.created', limit: '1' } });
    expect((filtered.body.events as Json[]).map((e) => e.event)).toEqual(['child.created']);

    // Pending events cannot be replayed; once failed for good they can.
    const createdId = events[1]?.id as string;
    expect((await call(env, 'partner-replay-event', { key: p.key, body: { event_id: createdId } })).status).toBe(409);
    await env.db`update events set delivery_status = 'failed', attempts = 4, next_attempt_at = null where id = ${createdId}`;
    fail = false;
    const replay = await call(env, 'partner-replay-event', { key: p.key, body: { event_id: createdId } });
    expect(replay.body).toEqual({ success: true, event_id: createdId, delivery_status: 'pending' });
    await env.settle();
    const row = await eventRow(createdId);
    expect(row).toMatchObject({ delivery_status: 'delivered', attempts: 1 });
    const sameBody = posts(r).filter((x) => x.body === row?.body);
    expect(sameBody.length).toBeGreaterThanOrEqual(2);
  });

  it('403 for another partner’s event, 404 for an unknown one, 400 for bad input', async () => {
    const r = await receiver((_q, res) => res.end());
    const a = await partnerWithWebhook(r.url);
    const b = await partnerWithWebhook(r.url);
    const c = await createChildVia(env, a.key);
    await env.settle();
    const id = await lastEventOf(c.child.api_key_id, 'child.created');
    expect((await call(env, 'partner-replay-event', { key: b.key, body: { event_id: id } })).status).toBe(403);
    expect((await call(env, 'partner-replay-event', { key: a.key, body: { event_id: '00000000-0000-4000-8000-000000000000' } })).status).toBe(404);
    expect((await call(env, 'partner-replay-event', { key: a.key, body: { event_id: 'x' } })).status).toBe(400);
    expect((await call(env, 'partner-list-events', { key: a.key, query: { status: 'lost' } })).status).toBe(400);
    expect((await call(env, 'partner-list-events', { key: a.key, query: { limit: '0' } })).status).toBe(400);
    const theirs = await call(env, 'partner-list-events', { key: b.key, query: { child_api_key_id: c.child.api_key_id } });
    expect(theirs.body.events).toEqual([]);
  });
});
