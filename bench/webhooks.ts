import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parentPort, Worker, workerData } from 'node:worker_threads';
import { dispatchNewEvents, mintWebhookSecret, sweepWebhookDeliveries } from '@sightline/core';
import { verifyWebhook } from '@sightline/webhook-verify';
import { Pool } from 'undici';
import { openBenchService } from './database.ts';
import { figure, formatTable, machineLine, printFigures, setting, verdict } from './lib.ts';

/**
 * `npm run bench -- webhooks`, counted where a customer counts: at a receiver that verifies every
 * delivery's signature with @sightline/webhook-verify and the partner's secret, on its own worker
 * thread (a plain node:http server: neither its parsing nor its HMACs share the engine's event loop).
 *
 * 1. Throughput. BENCH_EVENTS (10,000) fresh events of one partner through the real engine —
 *    dispatchNewEvents, as every action runs it: claim, open the secret, sign, POST over loopback,
 *    record — from the call (before the first claim) to the last verified receipt. The baseline is
 *    the plainest way to put the same bodies on the wire, signed as the spec says: a loop of undici
 *    POSTs from this process, as many in flight as one engine batch sends (64), signing each with
 *    node's HMAC, no database. Then the database must show every event delivered on exactly one
 *    recorded, successful attempt. BENCH_WARMUP (1,000) events go through each side first, uncounted.
 * 2. The sweep. 10,000 due retries over 100 URLs: one sweep must send exactly 5 per URL (the cap),
 *    the receiver must have verified exactly those 500, and the 9,500 it deferred must be untouched:
 *    pending, on their first attempt, due when they were, with no attempt logged and never received.
 *
 * A wrong count or a broken check fails the bench (exit 1); missing the goal is a finding.
 */
const EVENTS = setting('BENCH_EVENTS', 10_000);
const ROUNDS = setting('BENCH_ROUNDS', 1);
/** Events through each side before the measured rounds, not counted (BENCH_WARMUP; 0 for none). */
const WARMUP = setting('BENCH_WARMUP', 1_000, 0);
const URLS = 100;
const RETRY_CAP = 5;
const GOAL_PER_SECOND = 1_500;
/** The engine's sends in flight per claimed batch (delivery.ts SEND_CONCURRENCY); the baseline keeps as many. */
const BASELINE_IN_FLIGHT = 64;
/** The production pool (DATABASE_POOL_MAX's default). */
const POOL = 10;

/** What the receiver has verified since its last reset. */
interface ReceiverReport {
  /** Distinct events whose signature verified (keyed by body: every event's stored bytes are unique). */
  distinct: number;
  /** Verified deliveries of an event already received. */
  duplicates: number;
  /** Deliveries that failed verification (answered 401); the first one's reason. */
  invalid: number;
  firstInvalid?: string;
  /** Wall-clock milliseconds (timeOrigin + now, comparable across threads) of the last verified receipt. */
  lastAt: number;
  /** Distinct verified events by request path. */
  perPath: Record<string, number>;
  /** The distinct bodies, when asked for. */
  bodies?: string[];
}

const wallNow = () => performance.timeOrigin + performance.now();

/** The receiver's side, on its worker thread: a plain node:http server that verifies every POST. */
export async function receiverWorker(): Promise<void> {
  const secrets = workerData as Record<string, string>;
  let seen = new Set<string>();
  let report: ReceiverReport = { distinct: 0, duplicates: 0, invalid: 0, lastAt: 0, perPath: {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const path = req.url ?? '';
      const secret = secrets[path];
      const verified = secret === undefined ? Promise.reject(new Error(`no secret for ${path}`)) : verifyWebhook(raw, req.headers, secret);
      verified.then(
        () => {
          const body = raw.toString('utf8');
          if (seen.has(body)) report.duplicates++;
          else {
            seen.add(body);
            report.distinct++;
            report.perPath[path] = (report.perPath[path] ?? 0) + 1;
          }
          report.lastAt = wallNow();
          res.statusCode = 204;
          res.end();
        },
        (err: unknown) => {
          report.invalid++;
          report.firstInvalid ??= err instanceof Error ? err.message : String(err);
          res.statusCode = 401;
          res.end();
        },
      );
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  parentPort?.on('message', (m: { type: 'report'; bodies: boolean } | { type: 'reset' } | { type: 'close' }) => {
    if (m.type === 'reset') {
      seen = new Set();
      report = { distinct: 0, duplicates: 0, invalid: 0, lastAt: 0, perPath: {} };
      parentPort?.postMessage({ type: 'reset' });
    } else if (m.type === 'report') {
      parentPort?.postMessage({ type: 'report', report: { ...report, ...(m.bodies ? { bodies: [...seen] } : {}) } });
    } else {
      server.closeAllConnections();
      server.close(() => parentPort?.close());
    }
  });
  parentPort?.postMessage({ type: 'ready', port: (server.address() as AddressInfo).port });
}

/** Starts the receiver's worker thread (through tsx, registered in the worker: Node 20 does not hand loader hooks on). */
async function startReceiver(secrets: Record<string, string>) {
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); }).then((b) => b.receiverWorker())`;
  const worker = new Worker(code, { eval: true, workerData: secrets });
  const failed = new Promise<never>((_, reject) => {
    worker.once('error', reject);
    worker.once('exit', (c) => reject(new Error(`receiver worker exited with ${c}`)));
  });
  failed.catch(() => undefined);
  const next = <T>(type: string) =>
    Promise.race([
      new Promise<T>((resolve) => {
        const on = (m: { type: string }) => {
          if (m.type !== type) return;
          worker.off('message', on);
          resolve(m as T);
        };
        worker.on('message', on);
      }),
      failed,
    ]);
  const { port } = await next<{ port: number }>('ready');
  return {
    origin: `http://127.0.0.1:${port}`,
    async report(bodies = false): Promise<ReceiverReport> {
      const reply = next<{ report: ReceiverReport }>('report');
      worker.postMessage({ type: 'report', bodies });
      return (await reply).report;
    },
    async reset(): Promise<void> {
      const reply = next('reset');
      worker.postMessage({ type: 'reset' });
      await reply;
    },
    async close(): Promise<void> {
      const exited = new Promise((r) => worker.once('exit', r));
      worker.postMessage({ type: 'close' });
      await exited;
    },
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** Waits until the receiver has verified `n` distinct events (or nothing new arrives for 10 s). */
async function receiverSettled(receiver: Receiver, n: number): Promise<ReceiverReport> {
  let last = await receiver.report();
  let quietSince = performance.now();
  while (last.distinct < n && performance.now() - quietSince < 10_000) {
    await new Promise((r) => setTimeout(r, 20));
    const now = await receiver.report();
    if (now.distinct + now.invalid + now.duplicates !== last.distinct + last.invalid + last.duplicates) quietSince = performance.now();
    last = now;
  }
  return last;
}

/** The baseline: the same bodies, signed as the spec says, POSTed by a plain loop of undici requests. */
async function plainLoop(
  receiver: Receiver,
  path: string,
  secret: string,
  bodies: string[],
): Promise<{ seconds: number; report: ReceiverReport; errors: number }> {
  const pool = new Pool(receiver.origin, { connections: BASELINE_IN_FLIGHT, keepAliveTimeout: 60_000 });
  let next = 0;
  let errors = 0;
  const t0 = wallNow();
  const lane = async () => {
    for (let i = next++; i < bodies.length; i = next++) {
      const body = bodies[i] as string;
      const ts = Date.now();
      try {
        const res = await pool.request({
          path,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'Sightline-Webhooks/1',
            'x-service-event': 'child.updated',
            'x-service-timestamp': String(ts),
            'x-service-signature': createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex'),
          },
          body,
        });
        await res.body.dump();
        if (res.statusCode !== 204) errors++;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: BASELINE_IN_FLIGHT }, lane));
  await pool.close();
  const report = await receiverSettled(receiver, bodies.length);
  return { seconds: (report.lastAt - t0) / 1000, report, errors };
}

export async function run(): Promise<void> {
  const { db, kind, deps, close } = await openBenchService(POOL);
  const { keyring } = deps;
  // One partner per URL for the sweep, one fresh partner per throughput round and one for the
  // warm-up; each has its own secret.
  const partners: { id: string; path: string; secret: string }[] = [];
  const secrets: Record<string, string> = {};
  for (let i = 0; i < URLS + ROUNDS + 1; i++) {
    const path = `/hooks/${i}`;
    const secret = mintWebhookSecret();
    secrets[path] = secret;
    partners.push({ id: '', path, secret });
  }
  const receiver = await startReceiver(secrets);
  const problems: string[] = [];
  try {
    for (const p of partners) {
      const [a] = await db<{ id: string }>`
        insert into accounts (name, is_partner, partner_webhook_url, partner_webhook_secret_sealed)
        values (${`bench partner ${p.path}`}, true, ${`${receiver.origin}${p.path}`}, ${await keyring.seal(p.secret)}) returning id`;
      p.id = a?.id ?? '';
    }
    const sweepPartners = partners.slice(0, URLS);

    // Warm-up, not counted: as in a running server, the pool's connections have planned the engine's
    // statements and both sides' code is compiled before anything is timed.
    if (WARMUP) {
      const warm = partners[URLS + ROUNDS] as (typeof partners)[number];
      await db`select sl_emit(${warm.id}, null, 'child.updated', jsonb_build_object('warm-up', g)) from generate_series(1, ${WARMUP}) g`;
      const bodies = (await db<{ body: string }>`select body from events where partner_account_id = ${warm.id} order by seq`).map((r) => r.body);
      await plainLoop(receiver, warm.path, warm.secret, bodies);
      await receiver.reset();
      await dispatchNewEvents({ ctx: deps, input: { partnerAccountId: warm.id } });
      const warmed = await receiverSettled(receiver, WARMUP);
      if (warmed.distinct !== WARMUP || warmed.invalid) problems.push(`warm-up: ${warmed.distinct} verified of ${WARMUP}, ${warmed.invalid} invalid`);
    }

    // 1. Throughput, rounds of baseline then engine on the same fresh events.
    let oursEvents = 0;
    let oursSeconds = 0;
    let oursUntilReturned = 0;
    let baseEvents = 0;
    let baseSeconds = 0;
    const rounds: string[][] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const p = partners[URLS + round] as (typeof partners)[number];
      await db`select sl_emit(${p.id}, null, 'child.updated', jsonb_build_object('round', ${round}::int, 'n', g)) from generate_series(1, ${EVENTS}) g`;
      const bodies = (await db<{ body: string }>`select body from events where partner_account_id = ${p.id} order by seq`).map((r) => r.body);

      await receiver.reset();
      const base = await plainLoop(receiver, p.path, p.secret, bodies);
      if (base.report.distinct !== EVENTS || base.report.invalid || base.errors) {
        problems.push(
          `baseline round ${round + 1}: ${base.report.distinct} verified of ${EVENTS}, ${base.report.invalid} invalid (${base.report.firstInvalid ?? '-'}), ${base.errors} errors`,
        );
      }
      baseEvents += base.report.distinct;
      baseSeconds += base.seconds;

      await receiver.reset();
      const t0 = wallNow();
      const report = await dispatchNewEvents({ ctx: deps, input: { partnerAccountId: p.id } });
      const returnedAt = wallNow();
      const got = await receiverSettled(receiver, EVENTS);
      const seconds = (got.lastAt - t0) / 1000;
      oursEvents += got.distinct;
      oursSeconds += seconds;
      oursUntilReturned += (returnedAt - t0) / 1000;
      if (got.distinct !== EVENTS || got.invalid || got.duplicates) {
        problems.push(
          `engine round ${round + 1}: ${got.distinct} verified of ${EVENTS}, ${got.invalid} invalid (${got.firstInvalid ?? '-'}), ${got.duplicates} duplicates`,
        );
      }
      const [row] = await db<{ events: number; delivered_once: number; attempt_rows: number; succeeded_rows: number }>`
        select count(*)::int as events,
               count(*) filter (where e.delivery_status = 'delivered' and e.attempts = 1 and e.lease_owner is null)::int as delivered_once,
               (select count(*)::int from webhook_attempts w join events x on x.id = w.event_id where x.partner_account_id = ${p.id}) as attempt_rows,
               (select count(*)::int from webhook_attempts w join events x on x.id = w.event_id
                 where x.partner_account_id = ${p.id} and w.attempt = 1 and w.succeeded and w.finished_at is not null and w.status_code = 204) as succeeded_rows
        from events e where e.partner_account_id = ${p.id}`;
      const dbOk = row?.events === EVENTS && row.delivered_once === EVENTS && row.attempt_rows === EVENTS && row.succeeded_rows === EVENTS;
      if (!dbOk) problems.push(`engine round ${round + 1}: database ${JSON.stringify(row)}, expected ${EVENTS} of each`);
      const rate = got.distinct / seconds;
      rounds.push(
        [
          `round ${round + 1}: baseline (plain undici loop)`,
          `${base.report.distinct} / ${EVENTS}`,
          (base.report.distinct / base.seconds).toFixed(0),
          '',
        ],
        [
          `round ${round + 1}: engine (dispatchNewEvents)`,
          `${got.distinct} / ${EVENTS}`,
          rate.toFixed(0),
          `engine's own report: ${report.delivered} delivered, ${report.failed} failed, ${report.released} given back, returned after ${(returnedAt - t0).toFixed(0)} ms; database: ${dbOk ? 'each delivered once' : 'WRONG'}`,
        ],
      );
    }
    const ours = oursEvents / oursSeconds;
    const baseline = baseEvents / baseSeconds;

    // 2. Due retries over 100 URLs: 100 each, failed once and due a minute ago, one sweep.
    await receiver.reset();
    await db`
      select sl_emit(p, null, 'child.updated', jsonb_build_object('retry', g, 'url', p))
      from unnest(${`{${sweepPartners.map((p) => p.id).join(',')}}`}::uuid[]) p, generate_series(1, ${EVENTS / URLS}) g`;
    const dueAt = new Date(Date.now() - 60_000);
    await db`update events set attempts = 1, next_attempt_at = ${dueAt.toISOString()}::timestamptz
             where delivery_status = 'pending' and attempts = 0`;
    const due = (await db<{ n: number }>`select count(*)::int as n from events where delivery_status = 'pending' and attempts = 1`)[0]?.n ?? 0;
    const t1 = performance.now();
    const sweep = await sweepWebhookDeliveries({ ctx: deps, input: { batchSize: 1000 } });
    const sweepMs = performance.now() - t1;
    const expectedRetries = URLS * RETRY_CAP;
    const heard = await receiverSettled(receiver, expectedRetries);
    const received = new Set((await receiver.report(true)).bodies ?? []);
    const perPathCounts = sweepPartners.map((p) => heard.perPath[p.path] ?? 0);
    const [retried] = await db<{ delivered: number; deferred: number; deferred_untouched: number; max_logged_per_url: number; urls: number }>`
      select count(*) filter (where e.delivery_status = 'delivered' and e.attempts = 2)::int as delivered,
             count(*) filter (where e.delivery_status = 'pending')::int as deferred,
             count(*) filter (where e.delivery_status = 'pending' and e.attempts = 1 and e.lease_owner is null
                              and e.next_attempt_at = ${dueAt.toISOString()}::timestamptz
                              and not exists (select 1 from webhook_attempts w where w.event_id = e.id))::int as deferred_untouched,
             (select coalesce(max(n), 0)::int from (select count(*) as n from webhook_attempts where is_retry group by url) x) as max_logged_per_url,
             (select count(distinct url)::int from webhook_attempts where is_retry) as urls
      from events e where e.partner_account_id = any(${`{${sweepPartners.map((p) => p.id).join(',')}}`}::uuid[])`;
    const deferredBodies = await db<{ body: string }>`
      select body from events where delivery_status = 'pending' and partner_account_id = any(${`{${sweepPartners.map((p) => p.id).join(',')}}`}::uuid[])`;
    const deferredReceived = deferredBodies.filter((r) => received.has(r.body)).length;
    const deferredExpected = due - expectedRetries;
    const capHeld =
      sweep.claimed === expectedRetries &&
      sweep.delivered === expectedRetries &&
      heard.distinct === expectedRetries &&
      heard.invalid === 0 &&
      heard.duplicates === 0 &&
      perPathCounts.every((n) => n === RETRY_CAP) &&
      retried?.delivered === expectedRetries &&
      retried.max_logged_per_url === RETRY_CAP &&
      retried.urls === URLS;
    const deferredHeld = retried?.deferred === deferredExpected && retried.deferred_untouched === deferredExpected && deferredReceived === 0;
    if (!capHeld) {
      problems.push(
        `sweep: claimed ${sweep.claimed}, delivered ${sweep.delivered}; receiver verified ${heard.distinct} (${heard.invalid} invalid, ${heard.duplicates} duplicates), per URL ${Math.min(...perPathCounts)}–${Math.max(...perPathCounts)}; database ${JSON.stringify(retried)}`,
      );
    }
    if (!deferredHeld)
      problems.push(
        `sweep: deferred retries ${JSON.stringify(retried)}, ${deferredReceived} of them received; expected ${deferredExpected} untouched`,
      );

    process.stdout.write(
      [
        `webhooks bench — ${kind}; ${machineLine()}`,
        `receiver: node:http on a worker thread, every delivery verified with @sightline/webhook-verify; counted there, distinct events`,
        '',
        formatTable(
          ['measure', 'verified', 'per second', 'note'],
          [
            rounds,
            [
              [
                'engine, all rounds',
                String(oursEvents),
                ours.toFixed(0),
                `≥ ${GOAL_PER_SECOND}: ${verdict(ours >= GOAL_PER_SECOND)}; ${(oursEvents / oursUntilReturned).toFixed(0)}/s until dispatch returned (all recorded)`,
              ],
              ['baseline, all rounds', String(baseEvents), baseline.toFixed(0), `engine / baseline ${(ours / baseline).toFixed(2)}`],
            ],
            [
              ['due retries', String(due), '', `${URLS} URLs × ${EVENTS / URLS}`],
              ['retries sent by one sweep', String(heard.distinct), '', `${URLS} × ${RETRY_CAP} = ${expectedRetries}: ${verdict(capHeld)}`],
              ['retries received per URL', `${Math.min(...perPathCounts)}–${Math.max(...perPathCounts)}`, '', `each ${RETRY_CAP}`],
              [
                'deferred retries untouched',
                `${retried?.deferred_untouched ?? 0} / ${deferredExpected}`,
                '',
                `pending, attempt 1, same due time, no log row; ${deferredReceived} received: ${verdict(deferredHeld)}`,
              ],
              ['sweep time', `${sweepMs.toFixed(0)} ms`, '', ''],
            ],
          ],
        ),
        '',
        ...problems.map((p) => `FAILED: ${p}`),
      ].join('\n'),
    );
    printFigures([
      figure('webhooks', 'signed deliveries per second, verified at the receiver', {
        ours: Math.round(ours),
        baseline: Math.round(baseline),
        goal: `ours >= ${GOAL_PER_SECOND}`,
        unit: 'deliveries/s',
      }),
      figure('webhooks', `sweep of ${due} due retries over ${URLS} URLs (${expectedRetries} sent)`, { ours: Math.round(sweepMs), unit: 'ms' }),
    ]);
    if (problems.length) process.exitCode = 1;
  } finally {
    await close();
    await receiver.close();
  }
}
