import { randomBytes } from 'node:crypto';
import { createPartner, grantCredits, sweepDataLifecycle, workTrackerQueue } from '@sightline/core';
import { FUNCTIONS_PREFIX } from '@sightline/host';
import { createTestEnv, type TestEnv } from '../tests/support/app.ts';
import { realIpDeps } from '../tests/support/ip.ts';
import { createChildVia, seedDirectAccount } from '../tests/support/seed.ts';
import {
  type CountedRequest,
  type CountedResult,
  countedTable,
  driveCounted,
  type Figure,
  figure,
  machineLine,
  printFigures,
  serveForBench,
  setting,
} from './lib.ts';

/**
 * `npm run bench -- soak` (real Postgres only: DATABASE_URL), issue 15 §4: the production build
 * (`npm run serve`, its scheduler and tracker worker running) under a mixed load for BENCH_SECONDS
 * (600): tracker beacons from many visitors, ip-to-company lookups, and partner calls (pool-state
 * reads and one-unit top-up transfers), four closed loops at once, in windows of BENCH_WINDOW
 * seconds (60) with the server's RSS read after each. Then, counted in the database:
 * - every beacon answered 202 is a stored event, and every visitor is identified and charged once;
 * - every transfer answered 200 moved exactly one unit from the pool to the child, and no other did;
 * - every lookup answered is counted once in the account's usage.
 * The data-lifecycle sweep runs beside the load at the start of each window, and the database's
 * tables + indexes are read after each (their growth per stored beacon is reported).
 * Memory is flat when the last window's RSS is within 10% of the second's (the first warms the JIT,
 * the pools and the caches); the figure is reported beside the 150 MB the HTTP benches hold to. The
 * requests per second of the last window against the second's are reported the same way.
 */
const UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:130.0) Gecko/20100101 Firefox/130.0';

/** Addresses in Apple's 17.0.0.0/8: US businesses in the shipped data, so every visitor is identified. */
const apple = (n: number) => `17.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

/** Tables + indexes (and TOAST) of the database's own schema, partitions included. */
async function storedBytes(env: TestEnv): Promise<number> {
  const [r] = await env.db<{ bytes: string }>`
    select coalesce(sum(pg_total_relation_size(c.oid)), 0)::text as bytes
    from pg_class c join pg_namespace s on s.oid = c.relnamespace where s.nspname = 'public' and c.relkind in ('r', 'm')`;
  return Number(r?.bytes ?? 0);
}

async function count(env: TestEnv, siteId: string, childKeyId: string, poolAccount: string, lookupAccount: string) {
  const [r] = await env.db<{ events: number; identified: number; pending: number; used: number; child: number; pool: number; lookups: number }>`
    select (select count(*)::int from tracker_events where website_id = ${siteId}) as events,
           (select count(*)::int from identifications where website_id = ${siteId} and status = 'identified') as identified,
           (select count(*)::int from identifications where website_id = ${siteId} and status = 'pending') as pending,
           (select ids_used_this_period from child_subscriptions where api_key_id = ${childKeyId}) as used,
           (select topup_balance from child_subscriptions where api_key_id = ${childKeyId}) as child,
           (select topup_balance from pools where account_id = ${poolAccount}) as pool,
           (select coalesce(sum(calls), 0)::int from usage_daily where account_id = ${lookupAccount} and operation = 'ip-to-company') as lookups`;
  if (!r) throw new Error('no counts');
  return r;
}

export async function run(): Promise<void> {
  if (!process.env.DATABASE_URL) throw new Error('bench soak needs real Postgres: set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test)');
  const seconds = setting('BENCH_SECONDS', 600);
  const windowSeconds = Math.min(seconds, setting('BENCH_WINDOW', 60));
  const windows = Math.max(2, Math.round(seconds / windowSeconds));
  const env = await createTestEnv({ pool: 10, ip: realIpDeps({ recent: true }) });
  try {
    const partner = await createPartner({ ctx: env.deps, input: { name: 'Soak Partner', quota: 100_000_000, topup: 100_000_000 } });
    const suffix = randomBytes(4).toString('hex');
    const site = await createChildVia(env, partner.key, { name: 'Soak', domain: `soak-${suffix}.example.com`, monthly_id_quota: 10_000_000 });
    const lookup = await seedDirectAccount(env.deps, 'Soak lookups');
    await grantCredits({ ctx: env.deps, input: { accountId: lookup.account_id, credits: 100_000_000 } });
    const server = await serveForBench(env, {
      pool: 10,
      ipData: true,
      env: {
        TRUSTED_PROXIES: '127.0.0.1/32',
        RATE_LIMIT_PER_MINUTE: '1000000',
        // A load of distinct new visitors is what collect's budgets refuse: lifted (still counted) so the bench measures the path.
        TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE: '1000000',
        TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE: '1000000',
      },
    });
    const figures: Figure[] = [];
    try {
      const start = await count(env, site.website.id, site.child.api_key_id, partner.account_id, lookup.account_id);
      const visitors = 20_000;
      const beacons: CountedRequest[] = Array.from({ length: visitors * 2 }, (_, i) => {
        const v = i % visitors;
        return {
          path: `${FUNCTIONS_PREFIX}/collect`,
          headers: { 'content-type': 'text/plain;charset=UTF-8', 'user-agent': UA, 'x-forwarded-for': apple(v + 1) },
          body: JSON.stringify({
            tracking_script_id: site.website.tracking_script_id,
            type: 'pageview',
            url: `https://${site.website.domain}/${i < visitors ? '' : 'pricing'}`,
            session_id: `s-${v}-${suffix}`,
          }),
        };
      });
      const lookups: CountedRequest[] = Array.from({ length: 5_000 }, (_, i) => ({
        path: `${FUNCTIONS_PREFIX}/ip-to-company`,
        headers: { 'x-access-key': lookup.key, 'content-type': 'application/json' },
        body: JSON.stringify({ ip: i % 2 ? apple(100_000 + i) : `8.8.${(i >> 8) & 255}.${i & 255}` }),
      }));
      const transfer: CountedRequest = {
        path: `${FUNCTIONS_PREFIX}/partner-transfer-topup`,
        headers: { 'x-access-key': partner.key, 'content-type': 'application/json' },
        body: JSON.stringify({ child_api_key_id: site.child.api_key_id, amount: 1 }),
      };
      const poolState: CountedRequest = { path: `${FUNCTIONS_PREFIX}/partner-pool-state`, headers: { 'x-access-key': partner.key } };

      process.stdout.write(
        [
          'bench soak',
          `  ${machineLine()}`,
          `  server: ${server.where}; IP_DATA=1, scheduler and tracker worker on, TRUSTED_PROXIES=127.0.0.1/32`,
          `  load: ${windows} windows of ${windowSeconds} s; in each, four closed loops at once: collect (16 connections, ${visitors} visitors × 2 pages),`,
          '        ip-to-company (8), partner-transfer-topup (4), partner-pool-state (4)',
          '',
        ].join('\n'),
      );
      const results: CountedResult[] = [];
      const rss: number[] = [];
      const disk: number[] = [];
      const diskBefore = await storedBytes(env);
      let beaconCursor = 0;
      for (let w = 0; w < windows; w++) {
        // Each window starts the beacon list where the last left off, so visitors are not re-sent first.
        const rotated = [...beacons.slice(beaconCursor), ...beacons.slice(0, beaconCursor)];
        const origin = server.url;
        // The data-lifecycle sweep while the beacons arrive, as a replica's schedule runs it (partitions
        // made ahead, expired rows deleted; under the real clock no week of events is due yet: bench
        // storage runs the retention itself over simulated months).
        const sweep = sweepDataLifecycle({ ctx: env.deps, input: {} });
        const round = await Promise.all([
          driveCounted({ name: `collect #${w + 1}`, origin, method: 'POST', requests: rotated, connections: 16, seconds: windowSeconds }),
          driveCounted({ name: `ip-to-company #${w + 1}`, origin, method: 'POST', requests: lookups, connections: 8, seconds: windowSeconds }),
          driveCounted({ name: `transfer-topup #${w + 1}`, origin, method: 'POST', requests: [transfer], connections: 4, seconds: windowSeconds }),
          driveCounted({ name: `pool-state #${w + 1}`, origin, method: 'GET', requests: [poolState], connections: 4, seconds: windowSeconds }),
        ]);
        await sweep;
        beaconCursor = (beaconCursor + (round[0]?.completed ?? 0)) % beacons.length;
        results.push(...round);
        const now = await server.rss();
        rss.push(now ?? Number.NaN);
        const bytes = await storedBytes(env);
        disk.push(bytes);
        process.stdout.write(
          `  window ${w + 1}/${windows}: ${round.map((r) => `${r.name.split(' ')[0]} ${Math.round(r.completed / r.seconds)}/s`).join(', ')}; server RSS ${now} MB; tables + indexes ${(bytes / 1024 / 1024).toFixed(1)} MB\n`,
        );
      }

      // Let the worker finish what the last window left, then count.
      const drainStarted = performance.now();
      for (;;) {
        const r = await workTrackerQueue({ ctx: env.deps, input: {} });
        const c = await count(env, site.website.id, site.child.api_key_id, partner.account_id, lookup.account_id);
        const [q] = await env.db<{ n: number }>`select count(*)::int as n from tracker_queue`;
        if (!c.pending && !q?.n) break;
        if (!r.visits.claims && !r.identifications.claims) await new Promise((done) => setTimeout(done, 200));
        if (performance.now() - drainStarted > 300_000) throw new Error('the tracker backlog did not drain in 300 s');
      }
      // Usage is written a second after it is counted.
      await new Promise((done) => setTimeout(done, 2_000));
      const end = await count(env, site.website.id, site.child.api_key_id, partner.account_id, lookup.account_id);

      const sum = (prefix: string, status: string) =>
        results.filter((r) => r.name.startsWith(prefix)).reduce((n, r) => n + (r.statuses[status] ?? 0), 0);
      const completed = (prefix: string) => results.filter((r) => r.name.startsWith(prefix)).reduce((n, r) => n + r.completed, 0);
      const errors = results.reduce((n, r) => n + r.errors, 0);
      const accepted = sum('collect', '202');
      const moved = end.child - start.child;
      const lost = {
        beacons: accepted - (end.events - start.events),
        transfers: Math.abs(sum('transfer-topup', '200') - moved) + Math.abs(start.pool - end.pool - moved),
        lookups: completed('ip-to-company') - (end.lookups - start.lookups),
        charges: end.used - end.identified,
        unanswered: errors,
        other: results.reduce(
          (n, r) =>
            n +
            Object.entries(r.statuses)
              .filter(([s]) => !['200', '202'].includes(s))
              .reduce((m, [, k]) => m + k, 0),
          0,
        ),
      };
      process.stdout.write(`\n${countedTable(results)}\n`);
      process.stdout.write(
        [
          '',
          `  stored events: ${end.events - start.events} (202s: ${accepted}); identified: ${end.identified}, charged: ${end.used}`,
          `  transfers answered 200: ${sum('transfer-topup', '200')}; moved to the child: ${moved}; taken from the pool: ${start.pool - end.pool}`,
          `  lookups answered: ${completed('ip-to-company')}; counted in usage: ${end.lookups - start.lookups}`,
          `  server RSS after each window (MB): ${rss.join(', ')}`,
          `  drained in ${((performance.now() - drainStarted) / 1000).toFixed(1)} s after the load`,
          '',
        ].join('\n'),
      );
      const windowRate = (which: (w: number) => boolean) =>
        Math.round(results.filter((_, i) => which(Math.floor(i / 4))).reduce((n, r) => n + r.completed / r.seconds, 0));
      const warmed = rss[1] ?? Number.NaN;
      const last = rss.at(-1) ?? Number.NaN;
      const total = Object.values(lost).reduce((a, b) => a + b, 0);
      figures.push(
        figure('soak', 'rss_last_vs_second_window', { ours: last, baseline: warmed, goal: 'ratio <= 1.1', unit: 'MB' }),
        figure('soak', 'lost_or_doubled', {
          ours: total,
          goal: 'ours == 0',
          unit: `beacons ${lost.beacons}, transfers ${lost.transfers}, lookups ${lost.lookups}, charges ${lost.charges}, unanswered ${lost.unanswered}, non-2xx ${lost.other}`,
        }),
        // Disk cannot be flat in real time under a 30-day retention: its growth per beacon is what
        // bench storage multiplies into months (and there shows flat once retention runs).
        figure('soak', 'tables and indexes growth per stored beacon (all four loads write; sweep each window)', {
          ours: ((disk.at(-1) ?? Number.NaN) - diskBefore) / Math.max(1, end.events - start.events),
          unit: 'bytes',
        }),
        figure('soak', 'events_per_second', { ours: Math.round(accepted / (windows * windowSeconds)), unit: 'events/s (reported)' }),
        // Throughput that falls window after window is a cost that grows with the work done (the
        // postgres.js queue once did: postgres-queue.ts): all four loops' requests, last vs second.
        figure('soak', 'requests_per_second_last_vs_second_window', {
          ours: windowRate((w) => w === windows - 1),
          baseline: windowRate((w) => w === 1),
          unit: 'req/s (reported)',
        }),
      );
    } finally {
      await server.close();
    }
    printFigures(figures);
  } finally {
    await env.close();
  }
}
