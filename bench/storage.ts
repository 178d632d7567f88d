import { randomBytes } from 'node:crypto';
import { createPartner, sweepDataLifecycle, workTrackerQueue } from '@sightline/core';
import { createTestEnv, type TestEnv } from '../tests/support/app.ts';
import { realIpDeps } from '../tests/support/ip.ts';
import { createChildVia } from '../tests/support/seed.ts';
import { visitorAddresses } from './collect.ts';
import { type Figure, figure, formatTable, machineLine, printFigures, setting } from './lib.ts';

/**
 * `npm run bench -- storage` (real Postgres only: DATABASE_URL), issue 30 §2/§3: what the database
 * holds over months of page views with the data-lifecycle sweep running, on a simulated clock.
 *
 * One website with a returning audience: BENCH_STORAGE_VISITORS (2,000) public addresses, each
 * opening one session a day of BENCH_STORAGE_PAGES (2) page views, for BENCH_STORAGE_MONTHS (5)
 * months of four weeks (MONTH_DAYS) starting tomorrow. Each simulated day, in order: the sweep
 * (sweepDataLifecycle, its `now` the day's start, the default retention: tracker events 30 days,
 * as the schedule runs it), the day's page views appended as sl_collect_events appends them (rows in
 * tracker_events with that day's received_at, queued for the worker), then the tracker worker
 * (workTrackerQueue, the shipped IP data, no paid providers) until the queue is empty, then a plain
 * VACUUM (what autovacuum does over a real day: the simulated day takes seconds). The HTTP
 * path is not here (bench collect measures it); only the clock is simulated.
 *
 * At the end of each month: the tables + indexes of the database (pg_total_relation_size of every
 * table and partition), tracker_events' rows and partitions. Flat: the last month's size within
 * 1.1× the second's (the first month fills the retention window). Also reported: bytes per 1M page
 * views, the first month's growth per page view × 1M (before retention removes anything; the
 * audience's visitors and identifications are made in it too).
 *
 * What the simulation holds fixed: the billing period (identifications are one per visitor and
 * period, a row a returning visitor adds each month; kept as the billing record, their addresses
 * aged after PERSONAL_DATA_RETENTION_MONTHS) and the audience (new visitors add a visitors row each,
 * kept as the site's aggregate). Both grow with the business, not with the page views.
 */
const UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:130.0) Gecko/20100101 Firefox/130.0';
const DAY_MS = 86_400_000;
const MAX_GROWTH = 1.1;
/**
 * A simulated month is four weeks: tracker_events is kept in weekly partitions, so between 30 and 36
 * days of events are held depending on the weekday; readings a whole number of weeks apart see the
 * same phase (30-day months compared a reading holding 31 days with one holding 37).
 */
const MONTH_DAYS = 28;

interface Month {
  month: number;
  pageViews: number;
  bytes: number;
  databaseBytes: number;
  events: number;
  partitions: number;
  sessions: number;
  seconds: number;
}

async function sizes(env: TestEnv) {
  const [r] = await env.db<{ bytes: string; database: string; events: number; partitions: number; sessions: number }>`
    select (select coalesce(sum(pg_total_relation_size(c.oid)), 0) from pg_class c join pg_namespace s on s.oid = c.relnamespace
            where s.nspname = 'public' and c.relkind in ('r', 'm'))::text as bytes,
           pg_database_size(current_database())::text as database,
           (select count(*)::int from tracker_events) as events,
           (select count(*)::int from pg_inherits where inhparent = 'tracker_events'::regclass) as partitions,
           (select count(*)::int from visitor_sessions) as sessions`;
  return {
    bytes: Number(r?.bytes ?? 0),
    databaseBytes: Number(r?.database ?? 0),
    events: r?.events ?? 0,
    partitions: r?.partitions ?? 0,
    sessions: r?.sessions ?? 0,
  };
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

export async function run(): Promise<void> {
  if (!process.env.DATABASE_URL)
    throw new Error('bench storage needs real Postgres: set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test)');
  const months = setting('BENCH_STORAGE_MONTHS', 5, 3);
  const visitorCount = setting('BENCH_STORAGE_VISITORS', 2000);
  const pages = setting('BENCH_STORAGE_PAGES', 2);
  const env = await createTestEnv({ pool: 4, ip: realIpDeps({ recent: true }) });
  try {
    const partner = await createPartner({ ctx: env.deps, input: { name: 'Bench Partner', quota: 100_000_000 } });
    const suffix = randomBytes(4).toString('hex');
    const site = await createChildVia(env, partner.key, { name: 'Storage', domain: `storage-${suffix}.example.com`, monthly_id_quota: 10_000_000 });
    const websiteId = site.website.id;
    const apiKeyId = site.child.api_key_id;
    const addresses = visitorAddresses(visitorCount);
    const paths = ['', 'pricing', 'docs/start', 'blog/post-1', 'about'];
    const urls = Array.from({ length: pages }, (_, p) => `https://${site.website.domain}/${paths[p % paths.length]}`);

    process.stdout.write(
      [
        'bench storage',
        `  ${machineLine()}`,
        `  ${visitorCount} returning visitors × 1 session × ${pages} page views a day = ${visitorCount * pages} page views a day, ${months} months of ${MONTH_DAYS} days (simulated clock)`,
        '  each day: sweepDataLifecycle (default retention), the page views appended, the tracker worker until drained',
        '',
      ].join('\n'),
    );

    const start = Math.ceil(Date.now() / DAY_MS) * DAY_MS;
    const before = await sizes(env);
    const rows: Month[] = [];
    let pageViews = 0;
    let t0 = performance.now();
    for (let day = 0; day < months * MONTH_DAYS; day++) {
      const dayStart = start + day * DAY_MS;
      await sweepDataLifecycle({ ctx: env.deps, input: { now: new Date(dayStart) } });
      // The day's page views, at spread-out times of the day, in the order they would arrive.
      const json = JSON.stringify(
        addresses.flatMap((ip, v) =>
          urls.map((url, p) => ({
            ip,
            url,
            session_id: `s-${v.toString(36)}-${day}`,
            at: new Date(dayStart + ((v * pages + p) / (addresses.length * pages)) * (DAY_MS - 1000)).toISOString(),
          })),
        ),
      );
      await env.db`
        with e as (
          insert into tracker_events (website_id, api_key_id, received_at, received_on, kind, ip, is_bot, session_id, url, user_agent)
          select ${websiteId}::uuid, ${apiKeyId}::uuid, x.at, (x.at at time zone 'UTC')::date, 'pageview', x.ip, false, x.session_id, x.url, ${UA}
          from jsonb_to_recordset(${json}::text::jsonb) as x(ip inet, url text, session_id text, at timestamptz)
          order by x.at
          returning id)
        insert into tracker_queue (event_id) select id from e order by id`;
      pageViews += addresses.length * pages;
      for (;;) {
        const r = await workTrackerQueue({ ctx: env.deps, input: {} });
        if (!r.visits.claims && !r.identifications.claims) break;
      }
      // What autovacuum does over a real day (its 1-minute naptime, run by the simulated day here):
      // dead rows of the day's updates (visitors, identifications, the queue) become reusable space.
      await env.db`vacuum`;
      if ((day + 1) % MONTH_DAYS === 0) {
        const s = await sizes(env);
        rows.push({ month: (day + 1) / MONTH_DAYS, pageViews, ...s, seconds: (performance.now() - t0) / 1000 });
        t0 = performance.now();
        const last = rows[rows.length - 1] as Month;
        const largest = await env.db<{ name: string; bytes: string }>`
          select coalesce(p.relname, c.relname) as name, sum(pg_total_relation_size(c.oid))::text as bytes
          from pg_class c join pg_namespace s on s.oid = c.relnamespace
          left join pg_inherits i on i.inhrelid = c.oid left join pg_class p on p.oid = i.inhparent
          where s.nspname = 'public' and c.relkind in ('r', 'm')
          group by 1 order by sum(pg_total_relation_size(c.oid)) desc limit 6`;
        process.stdout.write(
          `  month ${last.month}: ${mb(last.bytes)} MB tables + indexes, ${last.events} events in ${last.partitions} partitions; largest: ${largest
            .map((t) => `${t.name} ${mb(Number(t.bytes))} MB`)
            .join(', ')}\n`,
        );
      }
    }

    const [queue] = await env.db<{ events: number; pending: number }>`
      select (select count(*)::int from tracker_queue) as events,
             (select count(*)::int from identifications where website_id = ${websiteId} and status = 'pending') as pending`;
    const second = rows[1] as Month;
    const last = rows[rows.length - 1] as Month;
    const first = rows[0] as Month;
    const growth = last.bytes / second.bytes;
    const perMillion = ((first.bytes - before.bytes) / first.pageViews) * 1_000_000;
    process.stdout.write(
      `\n${formatTable(
        ['month', 'page views so far', 'tables + indexes', 'database', 'tracker_events rows', 'partitions', 'visitor_sessions', 'wall time'],
        [
          rows.map((m) => [
            String(m.month),
            String(m.pageViews),
            `${mb(m.bytes)} MB`,
            `${mb(m.databaseBytes)} MB`,
            String(m.events),
            String(m.partitions),
            String(m.sessions),
            `${m.seconds.toFixed(0)} s`,
          ]),
        ],
      )}\n`,
    );
    process.stdout.write(
      [
        `before the first day: ${mb(before.bytes)} MB tables + indexes (the schema, the seed)`,
        `last month / second month, tables + indexes: ${growth.toFixed(3)} (flat: ≤ ${MAX_GROWTH})`,
        `first month's growth per page view: ${((first.bytes - before.bytes) / first.pageViews).toFixed(0)} bytes (${mb(perMillion)} MB per 1M page views)`,
        `worker left at the end: ${queue?.events ?? 0} events, ${queue?.pending ?? 0} identifications pending`,
        '',
      ].join('\n'),
    );
    const figures: Figure[] = [
      figure('storage', `steady-state size under retention: tables + indexes, month ${last.month} vs month 2 (simulated clock)`, {
        ours: last.bytes,
        baseline: second.bytes,
        goal: `ratio <= ${MAX_GROWTH}`,
        unit: 'bytes',
      }),
      figure('storage', 'bytes per 1M page views (tables + indexes, first simulated month, returning audience)', { ours: perMillion, unit: 'bytes' }),
      figure('storage', 'tracker_events rows held at the end (30-day retention, weekly partitions)', { ours: last.events, unit: 'rows' }),
    ];
    printFigures(figures);
  } finally {
    await env.close();
  }
}
