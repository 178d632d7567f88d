import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createCoreDeps, createKeyring, dispatchNewEvents, mintWebhookSecret, silentLogger, sweepWebhookDeliveries } from '@sightline/core';
import { createNodeWebhookTransport } from '@sightline/host';
import { openBenchDatabase } from './database.ts';
import { formatTable, machineLine, verdict } from './lib.ts';

/**
 * `npm run bench -- webhooks`:
 * 1. 10,000 events to one local receiver through the real engine (claim, sign, POST over loopback,
 *    record each attempt): deliveries per second, target ≥ 1,000/s.
 * 2. One sweep over 10,000 due retries spread over 100 URLs: its time, and proof of the per-URL cap
 *    (at most 5 retried events per URL per minute, so 500 claimed).
 */
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const URLS = 100;

async function startReceiver() {
  let received = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.statusCode = 204;
      res.end();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    received: () => received,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export async function run(): Promise<void> {
  const { db, kind, drop } = await openBenchDatabase(16);
  const webhooks = createNodeWebhookTransport({ allowPrivate: true });
  const receiver = await startReceiver();
  const keyring = await createKeyring('bench-secret-bench-secret-bench-secret!');
  const deps = createCoreDeps({ db, keyring, webhooks, log: silentLogger, allowPrivateWebhooks: true });
  try {
    // One partner per URL; the first also takes the 10,000 fresh events.
    const partners: string[] = [];
    for (let i = 0; i < URLS; i++) {
      const sealed = await keyring.seal(mintWebhookSecret());
      const [a] = await db<{ id: string }>`
        insert into accounts (name, is_partner, partner_webhook_url, partner_webhook_secret_sealed)
        values (${`bench partner ${i}`}, true, ${`${receiver.base}/hooks/${i}`}, ${sealed}) returning id`;
      if (a) partners.push(a.id);
    }
    const first = partners[0] ?? '';

    // 1. Fresh events, first attempts.
    await db`select sl_emit(${first}, null, 'child.updated', jsonb_build_object('n', g)) from generate_series(1, ${EVENTS}) g`;
    const t0 = performance.now();
    const report = await dispatchNewEvents({ ctx: deps, input: { partnerAccountId: first } });
    const seconds = (performance.now() - t0) / 1000;
    const perSecond = report.delivered / seconds;

    // 2. Due retries over 100 URLs: 100 each, all failed once and due now.
    await db`
      select sl_emit(p, null, 'child.updated', jsonb_build_object('retry', g))
      from unnest(${`{${partners.join(',')}}`}::uuid[]) p, generate_series(1, ${EVENTS / URLS}) g`;
    await db`update events set attempts = 1, next_attempt_at = now() - interval '1 minute'
             where delivery_status = 'pending' and attempts = 0`;
    const due = (await db<{ n: number }>`select count(*)::int as n from events where delivery_status = 'pending' and attempts = 1`)[0]?.n ?? 0;
    const t1 = performance.now();
    const sweep = await sweepWebhookDeliveries({ ctx: deps, input: { batchSize: 1000 } });
    const sweepMs = performance.now() - t1;
    const perUrl = await db<{ url: string; n: number }>`
      select url, count(*)::int as n from webhook_attempts where is_retry group by url order by n desc`;
    const maxPerUrl = perUrl[0]?.n ?? 0;
    const capHeld = maxPerUrl <= 5 && sweep.claimed === URLS * 5;

    process.stdout.write(
      [
        `webhooks bench — ${kind}; ${machineLine()}`,
        '',
        formatTable(
          ['measure', 'value', 'target'],
          [
            [
              ['first attempts delivered', `${report.delivered} / ${EVENTS}`, 'all'],
              ['deliveries per second', perSecond.toFixed(0), `≥ 1000: ${verdict(perSecond >= 1000)}`],
            ],
            [
              ['due retries', String(due), `${URLS} URLs`],
              ['retries claimed by one sweep', String(sweep.claimed), `${URLS} × 5 = ${URLS * 5}`],
              ['most retries for one URL', String(maxPerUrl), `≤ 5: ${verdict(capHeld)}`],
              ['sweep time', `${sweepMs.toFixed(0)} ms`, ''],
            ],
          ],
        ),
        '',
      ].join('\n'),
    );
    if (report.delivered !== EVENTS || !capHeld) process.exitCode = 1;
  } finally {
    await deps.runner.drain();
    await webhooks.close();
    await receiver.close();
    await drop();
  }
}
