import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import { aggregateTrackerEvents, createPartner, type IdentificationReport, identifyVisitors, workTrackerQueue } from '@sightline/core';
import { FUNCTIONS_PREFIX } from '@sightline/host';
import { createTestEnv, type TestEnv } from '../tests/support/app.ts';
import { realIpDeps } from '../tests/support/ip.ts';
import { createChildVia } from '../tests/support/seed.ts';
import {
  CONNECTIONS,
  type CountedRequest,
  type CountedResult,
  countedFailures,
  countedRate,
  countedTable,
  driveCounted,
  type Figure,
  figure,
  formatTable,
  machineLine,
  memoryGoal,
  printFigures,
  serveForBench,
  setting,
  startBaseline,
  verdict,
  WARMUP_SECONDS,
} from './lib.ts';

/**
 * `npm run bench -- collect` (real Postgres only: DATABASE_URL):
 *
 * 1. The tracker beacon, end to end: `POST /functions/v1/collect` (text/plain JSON page views) on the
 *    production build of the host in its own process, with its tracker worker kicked after every
 *    stored beacon and its local IP data loaded, as `npm run serve` runs. The server believes
 *    X-Forwarded-For from 127.0.0.1 only (TRUSTED_PROXIES=127.0.0.1/32, as behind a load balancer),
 *    so each beacon carries its visitor's public address there and the events come from
 *    BENCH_VISITORS distinct visitors (each one session, several pages). The load is a closed loop
 *    of BENCH_CONNECTIONS keep-alive connections (a worker thread of this process) that stops
 *    sending at the deadline and waits for every response, so the 202s it counts are exact; the
 *    rows in tracker_events, counted in the database afterwards, must equal them (0 lost).
 *    Goal: ≥ 3,000 events/s sustained for BENCH_SECONDS (30), 0 lost; then the server's memory.
 * 2. The baseline, the same run, the same load generator: the plain Hono route the other HTTP benches
 *    use (bench/baseline-server.ts, its own process), measured before and after, so a drift over the
 *    run does not land on one side.
 * 3. The tracker worker on local-data hits: BENCH_IDENTIFICATIONS page views from distinct addresses
 *    in 17.0.0.0/8 (Apple's network: a US business in the shipped data), appended for a second child
 *    with enough IDs, then aggregated (aggregateTrackerEvents) and identified (identifyVisitors)
 *    until drained — the two steps of workTrackerQueue, timed apart — in this process with the
 *    shipped data and no paid providers. Counted in the database: identifications identified, and
 *    the child's ids_used_this_period equal to them.
 *
 * Settings: BENCH_SECONDS (30), BENCH_CONNECTIONS (32), BENCH_POOL (10, the host's default
 * DATABASE_POOL_MAX), BENCH_VISITORS (10,000), BENCH_IDENTIFICATIONS (10,000).
 */
const MIN_EVENTS_PER_SECOND = 3000;
/** Issue 30: collect at a quarter of the plain Hono route in the same run. */
const MIN_RATIO = 0.25;
/** Issue 30: the worker on local-data hits. */
const MIN_IDENTIFICATIONS_PER_SECOND = 2000;
const UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:130.0) Gecko/20100101 Firefox/130.0';

/** Distinct, public-looking IPv4 addresses (xorshift, reproducible), skipping the reserved blocks. */
export function visitorAddresses(n: number): string[] {
  const seen = new Set<string>();
  let x = 0x2545f491;
  while (seen.size < n) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const v = x >>> 0;
    const [a, b] = [v >>> 24, (v >>> 16) & 255];
    const reserved =
      a === 0 ||
      a === 10 ||
      a === 127 ||
      a >= 224 ||
      (a === 100 && b >= 64 && b < 128) ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b < 32) ||
      (a === 192 && b === 168) ||
      (a === 198 && (b === 18 || b === 19));
    if (!reserved) seen.add(`${a}.${b}.${(v >>> 8) & 255}.${v & 255}`);
  }
  return [...seen];
}

/** Waiting work of the tracker worker, as the database has it. */
async function backlog(env: TestEnv) {
  const [r] = await env.db<{ events: number; pending: number }>`
    select (select count(*)::int from tracker_queue) as events,
           (select count(*)::int from identifications where status = 'pending') as pending`;
  return { events: r?.events ?? 0, pending: r?.pending ?? 0 };
}

/** Clock ticks per second of /proc's utime and stime (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** User + system CPU of a process so far, in ms, from /proc (undefined when it is gone or unreadable). */
async function cpuMsOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), from field 3: utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** CPU ms of every process whose command is postgres (the whole server: every database's backends and its background workers). */
async function postgresCpuMs(): Promise<Map<number, number>> {
  const found = new Map<number, number>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const comm = await readFile(`/proc/${name}/comm`, 'utf8').catch(() => '');
    if (comm.trim() !== 'postgres') continue;
    const ms = await cpuMsOf(Number(name));
    if (ms !== undefined) found.set(Number(name), ms);
  }
  return found;
}

/** A reading of what the measured work costs: CPU of the server, of Postgres, WAL written, bytes stored. */
export interface Usage {
  serverMs: number;
  /** Per postgres process. */
  postgres: Map<number, number>;
  /** The backends connected to the bench's database (the server's pool and this process's). */
  ours: Set<number>;
  walLsn: string;
  /** Tables + indexes (and TOAST) of the database's own schema. */
  bytes: number;
  at: number;
}

export async function readUsage(env: TestEnv, serverPid: number | undefined): Promise<Usage> {
  const [db] = await env.db<{ lsn: string; bytes: string; pids: number[] }>`
    select pg_current_wal_lsn()::text as lsn,
           (select coalesce(sum(pg_total_relation_size(c.oid)), 0) from pg_class c join pg_namespace s on s.oid = c.relnamespace
            where s.nspname = 'public' and c.relkind in ('r', 'm'))::text as bytes,
           (select coalesce(array_agg(pid), '{}') from pg_stat_activity where datname = current_database()) as pids`;
  return {
    serverMs: (serverPid ? await cpuMsOf(serverPid) : undefined) ?? Number.NaN,
    postgres: await postgresCpuMs(),
    ours: new Set(db?.pids ?? []),
    walLsn: db?.lsn ?? '0/0',
    bytes: Number(db?.bytes ?? 0),
    at: performance.now(),
  };
}

/** What happened between two readings. A process that started in between counts from zero. */
export async function usageBetween(env: TestEnv, a: Usage, b: Usage) {
  let postgresMs = 0;
  let oursMs = 0;
  for (const [pid, ms] of b.postgres) {
    const spent = ms - (a.postgres.get(pid) ?? 0);
    postgresMs += spent;
    if (b.ours.has(pid) || a.ours.has(pid)) oursMs += spent;
  }
  const [w] = await env.db<{ bytes: string }>`select pg_wal_lsn_diff(${b.walLsn}::pg_lsn, ${a.walLsn}::pg_lsn)::text as bytes`;
  return {
    seconds: (b.at - a.at) / 1000,
    serverMs: b.serverMs - a.serverMs,
    /** Every postgres process: other databases on the same server (other benches) land here too. */
    postgresMs,
    /** The backends of the bench's database only: its statements, without the WAL writer and checkpointer. */
    oursMs,
    walBytes: Number(w?.bytes ?? 0),
    storedBytes: b.bytes - a.bytes,
  };
}

/** Other databases' backends busy on this Postgres right now (other benches sharing the server skew the cluster-wide figures). */
export async function otherActivity(env: TestEnv): Promise<number> {
  const [r] = await env.db<{ n: number }>`
    select count(*)::int as n from pg_stat_activity where datname <> current_database() and state = 'active' and backend_type = 'client backend'`;
  return r?.n ?? 0;
}

const storedEvents = async (env: TestEnv, websiteId: string) =>
  (await env.db<{ n: number }>`select count(*)::int as n from tracker_events where website_id = ${websiteId}`)[0]?.n ?? 0;

export async function run(): Promise<void> {
  if (!process.env.DATABASE_URL)
    throw new Error('bench collect needs real Postgres: set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test)');
  const seconds = setting('BENCH_SECONDS', 30);
  const connections = setting('BENCH_CONNECTIONS', CONNECTIONS);
  const pool = setting('BENCH_POOL', 10);
  const visitorCount = setting('BENCH_VISITORS', 10_000);
  const identifications = setting('BENCH_IDENTIFICATIONS', 10_000);
  if (identifications > 16_000_000) throw new Error('BENCH_IDENTIFICATIONS must fit in 17.0.0.0/8');

  // This process: seeding, counting, and (part 3) the tracker worker with the shipped IP data, built
  // as the host builds it without Redis (in-process recent results in front of Postgres).
  const env = await createTestEnv({ pool, ip: realIpDeps({ recent: true }) });
  try {
    const partner = await createPartner({ ctx: env.deps, input: { name: 'Bench Partner', quota: 100_000_000 } });
    const suffix = randomBytes(4).toString('hex');
    const site = await createChildVia(env, partner.key, { name: 'Collect', domain: `collect-${suffix}.example.com`, monthly_id_quota: 10_000_000 });
    const [version] = await env.db<{ v: string }>`select current_setting('server_version') as v`;

    const server = await serveForBench(env, {
      pool,
      ipData: true,
      env: {
        TRUSTED_PROXIES: '127.0.0.1/32',
        // A load of distinct new visitors is what collect's budgets refuse: lifted (still counted) so the bench measures the path.
        TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE: '1000000',
        TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE: '1000000',
      },
    });
    const baseline = await startBaseline();
    const figures: Figure[] = [];
    const events: CountedResult[] = [];
    const bares: CountedResult[] = [];
    const drains: string[] = [];
    let stored = 0;
    let accepted = 0;
    try {
      const origin = server.url;
      const addresses = visitorAddresses(visitorCount);
      // Each visitor: one session, four pages, in turn; the list cycles, so a long run revisits them.
      const beacons: CountedRequest[] = [];
      for (let page = 0; page < 4; page++) {
        for (let v = 0; v < addresses.length; v++) {
          beacons.push({
            path: `${FUNCTIONS_PREFIX}/collect`,
            headers: { 'content-type': 'text/plain;charset=UTF-8', 'user-agent': UA, 'x-forwarded-for': addresses[v] as string },
            body: JSON.stringify({
              tracking_script_id: site.website.tracking_script_id,
              type: 'pageview',
              url: `https://${site.website.domain}/${['', 'pricing', 'docs/start', 'blog/post-1'][page]}`,
              session_id: `s-${v.toString(36)}-${suffix}`,
            }),
          });
        }
      }
      const collect = (name: string, secs: number) => driveCounted({ name, origin, method: 'POST', requests: beacons, connections, seconds: secs });
      const bare = (name: string, secs: number) =>
        driveCounted({ name, origin: baseline.url, method: 'GET', requests: [{ path: baseline.path }], connections, seconds: secs });

      // A broken seed or route would otherwise show up only as a count mismatch after a full run.
      const probe = await fetch(`${origin}${FUNCTIONS_PREFIX}/collect`, {
        method: 'POST',
        headers: beacons[0]?.headers,
        body: beacons[0]?.body ?? '',
      });
      if (probe.status !== 202) throw new Error(`collect probe returned ${probe.status}: ${await probe.text()}`);
      await probe.body?.cancel();
      if ((await storedEvents(env, site.website.id)) !== 1) throw new Error('the collect probe was answered 202 but not stored');
      accepted = 1;

      process.stdout.write(
        [
          'bench collect',
          `  ${machineLine()}`,
          `  database: Postgres ${version?.v.split(' ')[0] ?? '?'} (throwaway database)`,
          `  server: ${server.where}; IP_DATA=1, tracker worker kicked per stored beacon, TRUSTED_PROXIES=127.0.0.1/32`,
          `  load: ${connections} keep-alive connections, closed loop (worker thread), every response awaited; ${addresses.length} visitors (X-Forwarded-For), 4 pages each`,
          `  runs: warm-up ${WARMUP_SECONDS} s each, then bare ${seconds} s, collect ${seconds} s, bare ${seconds} s; the worker's backlog is drained before each bare run`,
          '',
        ].join('\n'),
      );

      /**
       * Lets the worker catch up before a bare run, so that run measures the route and not the
       * worker's leftovers (the baseline shares the machine's two cores). The host's kick runs while
       * beacons arrive; what it leaves after the last one, the server's 5-second tracker sweep picks
       * up, and this process works the same queue beside it (the same workTrackerQueue, claims shared
       * with SKIP LOCKED) so the wait is short.
       */
      const drain = async (after: string) => {
        const left = await backlog(env);
        const t0 = performance.now();
        for (;;) {
          const b = await backlog(env);
          if (!b.events && !b.pending) break;
          const r = await workTrackerQueue({ ctx: env.deps, input: {} });
          // Nothing claimable (leased by the host's last kicked run, or given back for a retry): wait for it.
          if (!r.visits.claims && !r.identifications.claims) {
            if (performance.now() - t0 > 120_000) throw new Error(`the tracker backlog did not drain in 120 s: ${JSON.stringify(b)}`);
            await new Promise((done) => setTimeout(done, 200));
          }
        }
        drains.push(
          `${after}: ${left.events} events not yet aggregated, ${left.pending} identifications pending; drained in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
        );
      };

      // Warm-up: JIT, connection pools, the server's prepared statements.
      bares.push(await bare('bare (warm-up)', WARMUP_SECONDS));
      events.push(await collect('collect (warm-up)', WARMUP_SECONDS));
      await drain('after the warm-up');
      const before = await storedEvents(env, site.website.id);
      bares.push(await bare('bare #1', seconds));
      const busyBefore = await otherActivity(env);
      const u0 = await readUsage(env, server.pid);
      const measured = await collect('collect', seconds);
      const u1 = await readUsage(env, server.pid);
      events.push(measured);
      const storedAfterRun = (await storedEvents(env, site.website.id)) - before;
      const left = await backlog(env);
      const busyAfter = await otherActivity(env);
      await drain('after the measured collect run');
      const u2 = await readUsage(env, server.pid);
      const during = await usageBetween(env, u0, u1);
      const withCatchUp = await usageBetween(env, u0, u2);
      bares.push(await bare('bare #2', seconds));

      accepted += events.reduce((n, r) => n + (r.statuses['202'] ?? 0), 0);
      stored = await storedEvents(env, site.website.id);

      const b1 = bares[1] as CountedResult;
      const b2 = bares[2] as CountedResult;
      const bareRate = (countedRate(b1) + countedRate(b2)) / 2;
      const rate = countedRate(measured);
      const ok202 = measured.statuses['202'] ?? 0;
      const storedRate = storedAfterRun / measured.seconds;
      const ratio = rate / bareRate;

      process.stdout.write(`${countedTable([...bares, ...events])}\n`);
      process.stdout.write(`latency per response, from send to last byte, 0.01 ms resolution; req/s over the run's wall time\n\n`);
      process.stdout.write(
        [
          `worker during the measured run: ${storedAfterRun} events stored, ${storedAfterRun - left.events} aggregated by the kicked worker by the end;`,
          `  backlog at the end: ${left.events} events, ${left.pending} identifications pending`,
          ...drains.map((d) => `  ${d}`),
          '',
        ].join('\n'),
      );
      process.stdout.write(
        `${formatTable(
          ['check', 'measured', 'target', 'result'],
          [
            [
              [
                'collect events/s (202s / wall time)',
                rate.toFixed(0),
                `≥ ${MIN_EVENTS_PER_SECOND} for ${seconds} s`,
                verdict(rate >= MIN_EVENTS_PER_SECOND),
              ],
              ['  stored rows / wall time', storedRate.toFixed(0), '', ''],
              ['collect p50 / p99', `${measured.p50.toFixed(2)} / ${measured.p99.toFixed(2)} ms`, '', ''],
              [
                'collect errors (non-202 + no response)',
                String(measured.completed - ok202 + measured.errors),
                '0',
                verdict(measured.completed === ok202 && !measured.errors),
              ],
              ['collect / bare req/s (bare: mean of #1, #2)', `${(ratio * 100).toFixed(1)}%`, '', ''],
              [
                '202s counted by the client, all runs + probe',
                String(accepted),
                `= rows in tracker_events (${stored})`,
                verdict(accepted === stored),
              ],
              ['  lost (202 but no row)', String(Math.max(0, accepted - stored)), '0', verdict(accepted <= stored)],
            ],
          ],
        )}\n\n`,
      );
      const perK = (ms: number) => (ms / storedAfterRun) * 1000;
      process.stdout.write(
        `${formatTable(
          ['per unit of work (the measured collect run)', 'during the run', 'run + the worker catching up'],
          [
            [
              [
                'server CPU per 1k beacons (/proc, user + system)',
                `${perK(during.serverMs).toFixed(0)} ms`,
                `${perK(withCatchUp.serverMs).toFixed(0)} ms`,
              ],
              [
                "Postgres CPU per 1k beacons, this database's backends",
                `${perK(during.oursMs).toFixed(0)} ms`,
                `${perK(withCatchUp.oursMs).toFixed(0)} ms`,
              ],
              [
                'Postgres CPU per 1k beacons, every postgres process',
                `${perK(during.postgresMs).toFixed(0)} ms`,
                `${perK(withCatchUp.postgresMs).toFixed(0)} ms`,
              ],
              [
                'WAL bytes per event (whole server)',
                (during.walBytes / storedAfterRun).toFixed(0),
                (withCatchUp.walBytes / storedAfterRun).toFixed(0),
              ],
              [
                'tables + indexes growth per event',
                `${(during.storedBytes / storedAfterRun).toFixed(0)} B`,
                `${(withCatchUp.storedBytes / storedAfterRun).toFixed(0)} B`,
              ],
            ],
          ],
        )}\n`,
      );
      process.stdout.write(
        `  other databases' active backends on this Postgres at the run's start / end: ${busyBefore} / ${busyAfter} (their CPU and WAL land in the whole-server rows)\n` +
          `  the worker's catch-up ran in this process and the server (${withCatchUp.seconds.toFixed(1)} s in all); this process's own CPU is not counted\n\n`,
      );
      process.stdout.write(
        `load average after the HTTP runs: ${os
          .loadavg()
          .map((l) => l.toFixed(2))
          .join(', ')} (1, 5, 15 min; 2 CPUs)\n\n`,
      );
      const broken = [...bares.map((r) => [r, 200] as const), ...events.map((r) => [r, 202] as const)].flatMap(([r, code]) => {
        const why = countedFailures(r, code);
        return why ? [`${r.name}: ${why}`] : [];
      });
      if (broken.length) throw new Error(`unsuccessful responses: ${broken.join(' | ')}`);
      if (accepted !== stored) process.exitCode = 1;
      const rss = (await server.rss()) ?? Number.NaN;
      process.stdout.write(`server RSS after the collect runs: ${rss} MB (goal ≤ 150 MB)\n\n`);
      figures.push(
        figure('collect', `collect vs plain Hono: events/s sustained ${seconds} s, durable, 0 lost`, {
          ours: rate,
          baseline: bareRate,
          goal: `ratio >= ${MIN_RATIO} and ours >= ${MIN_EVENTS_PER_SECOND}`,
          unit: 'events/s',
        }),
        figure('collect', 'server CPU per 1k beacons (run + worker catch-up)', { ours: perK(withCatchUp.serverMs), unit: 'ms' }),
        figure('collect', "Postgres CPU per 1k beacons (this database's backends, run + worker catch-up)", {
          ours: perK(withCatchUp.oursMs),
          unit: 'ms',
        }),
        figure('collect', 'Postgres CPU per 1k beacons (every postgres process, run + worker catch-up)', {
          ours: perK(withCatchUp.postgresMs),
          unit: 'ms',
        }),
        figure('collect', 'WAL bytes per event (whole server, run + worker catch-up)', {
          ours: withCatchUp.walBytes / storedAfterRun,
          unit: 'bytes',
        }),
        figure('collect', 'bytes per 1M page views (tables + indexes growth per stored event × 1M, returning visitors)', {
          ours: (withCatchUp.storedBytes / storedAfterRun) * 1_000_000,
          unit: 'bytes',
        }),
        figure('collect', 'worker backlog at the end of the measured run (events not yet aggregated)', { ours: left.events, unit: 'events' }),
        figure('collect', 'worker backlog at the end of the measured run (identifications pending)', { ours: left.pending, unit: 'identifications' }),
        figure('collect', 'events lost (202 without a row)', { ours: Math.max(0, accepted - stored), goal: 'ours == 0', unit: 'events' }),
        figure('collect', 'server RSS after load (npm run serve, Postgres)', { ours: rss, goal: memoryGoal(false), unit: 'MB' }),
      );
    } finally {
      await server.close();
      await baseline.close();
    }

    const worker = await identificationThroughput(env, partner.key, identifications, suffix);
    figures.push(
      figure('collect', 'worker identifications/s (local-data hits, in the database)', {
        ours: worker.perSecond,
        goal: `ours >= ${MIN_IDENTIFICATIONS_PER_SECOND}`,
        unit: 'identifications/s',
      }),
      figure('collect', 'worker CPU per 1k identifications (the worker process, local-data hits)', { ours: worker.workerMsPerK, unit: 'ms' }),
      figure('collect', "Postgres CPU per 1k identifications (this database's backends)", { ours: worker.postgresMsPerK, unit: 'ms' }),
      figure('collect', 'WAL bytes per identification (whole server)', { ours: worker.walPerIdentification, unit: 'bytes' }),
    );
    printFigures(figures);
  } finally {
    await env.close();
  }
}

/** Part 3: the tracker worker on local-data hits, counted in the database. */
export async function identificationThroughput(
  env: TestEnv,
  partnerKey: string,
  n: number,
  suffix: string,
): Promise<{ perSecond: number; workerMsPerK: number; postgresMsPerK: number; walPerIdentification: number }> {
  const child = await createChildVia(env, partnerKey, { name: 'Identify', domain: `identify-${suffix}.example.com`, monthly_id_quota: n * 2 });
  const websiteId = child.website.id;
  const apiKeyId = child.child.api_key_id;
  // N page views from N distinct addresses of 17.0.0.0/8, appended (and queued for the worker) as sl_collect_events appends them.
  await env.db`
    with e as (
      insert into tracker_events (website_id, api_key_id, kind, ip, is_bot, session_id, url, user_agent)
      select ${websiteId}::uuid, ${apiKeyId}::uuid, 'pageview', '17.0.0.0'::inet + g, false, 's-' || g,
             ${`https://${child.website.domain}/pricing`}, ${UA}
      from generate_series(1, ${n}) g
      returning id)
    insert into tracker_queue (event_id) select id from e`;
  await env.db`analyze tracker_events`;
  await env.db`analyze tracker_queue`;

  const t0 = performance.now();
  let applied = 0;
  for (;;) {
    const r = await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    applied += r.applied;
    if (!r.claims) break;
  }
  const aggregateSeconds = (performance.now() - t0) / 1000;
  const [queued] = await env.db<{ n: number }>`select count(*)::int as n from identifications where website_id = ${websiteId} and status = 'pending'`;

  const total: IdentificationReport = { identified: 0, failed: 0, excluded: 0, dropped: 0, retried: 0, claims: 0 };
  const u0 = await readUsage(env, undefined);
  const cpu0 = process.cpuUsage();
  const t1 = performance.now();
  for (;;) {
    const r = await identifyVisitors({ ctx: env.deps, input: {} });
    for (const k of Object.keys(total) as (keyof IdentificationReport)[]) total[k] += r[k];
    if (!r.claims) break;
  }
  const identifySeconds = (performance.now() - t1) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const used = await usageBetween(env, u0, await readUsage(env, undefined));
  await env.settle();

  const [db] = await env.db<{ identified: number; failed: number; pending: number; used: number; events: number }>`
    select (select count(*)::int from identifications where website_id = ${websiteId} and status = 'identified') as identified,
           (select count(*)::int from identifications where website_id = ${websiteId} and status = 'failed') as failed,
           (select count(*)::int from identifications where website_id = ${websiteId} and status = 'pending') as pending,
           (select ids_used_this_period from child_subscriptions where api_key_id = ${apiKeyId}) as used,
           (select count(*)::int from events where child_api_key_id = ${apiKeyId} and event = 'visitor_identified') as events`;
  const identified = db?.identified ?? 0;
  const perSecond = identified / identifySeconds;
  process.stdout.write(
    [
      `tracker worker on local-data hits — ${n} page views from distinct addresses in 17.0.0.0/8, one child (quota ${n * 2} IDs), this process, no paid providers`,
      formatTable(
        ['measure', 'value', 'check'],
        [
          [
            ['aggregation (events → visitors, identifications queued)', `${applied} events in ${aggregateSeconds.toFixed(2)} s`, ''],
            ['  events/s', (applied / aggregateSeconds).toFixed(0), ''],
            ['identifications queued', String(queued?.n ?? 0), `= ${n}: ${verdict(queued?.n === n)}`],
            ['identification (waterfall + sl_settle_identification)', `${identified} identified in ${identifySeconds.toFixed(2)} s`, ''],
            ['  identifications/s (identified rows in the database)', perSecond.toFixed(0), ''],
            [
              '  worker report',
              `identified ${total.identified}, failed ${total.failed}, dropped ${total.dropped}, retried ${total.retried}, ${total.claims} claims`,
              '',
            ],
            [
              'in the database: identified / failed / pending',
              `${identified} / ${db?.failed ?? 0} / ${db?.pending ?? 0}`,
              `${n} / 0 / 0: ${verdict(identified === n && !db?.failed && !db?.pending)}`,
            ],
            ["child's ids_used_this_period", String(db?.used ?? 0), `= identified: ${verdict(db?.used === identified)}`],
            // The child has no webhook, so no visitor_identified row is written (nothing would send it).
            ['visitor_identified events written (no webhook)', String(db?.events ?? 0), `= 0: ${verdict(db?.events === 0)}`],
            ['whole worker (both steps)', `${(n / (aggregateSeconds + identifySeconds)).toFixed(0)} visits/s`, ''],
          ],
        ],
      ),
      '',
    ].join('\n'),
  );
  const workerMsPerK = ((cpu.user + cpu.system) / 1000 / identified) * 1000;
  const postgresMsPerK = (used.oursMs / identified) * 1000;
  process.stdout.write(
    `  per 1k identifications: worker (this process) ${workerMsPerK.toFixed(0)} ms CPU, Postgres (this database's backends) ${postgresMsPerK.toFixed(0)} ms CPU; WAL ${(used.walBytes / identified).toFixed(0)} bytes per identification\n\n`,
  );
  if (identified !== n || db?.used !== identified) process.exitCode = 1;
  return { perSecond, workerMsPerK, postgresMsPerK, walPerIdentification: used.walBytes / identified };
}
