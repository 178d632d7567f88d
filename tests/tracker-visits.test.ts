import { type AggregationReport, aggregateTrackerEvents, sweepDataLifecycle } from '@sightline/core';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, replicaEnv, type TestEnv } from './support/app.ts';
import { countingStatements } from './support/counting-db.ts';
import { usingPostgres } from './support/db.ts';
import { createChildVia, seedPartner, uniqueDomain } from './support/seed.ts';
import { beacon } from './support/tracker.ts';
import { until } from './support/wait.ts';

/**
 * Visits, as the worker aggregates them from tracker events: one visitor per address and website,
 * a visit per session, every page view, engaged time once per beacon, the first outside referrer,
 * and high intent by the documented rule. Bots are nobody's visitors.
 */
let env: TestEnv;
let site = { tracking_script_id: '', domain: '', website_id: '' };

/** A beacon from `from` (support/tracker.ts), with a browser's user agent unless `userAgent` says; collect accepts it. */
async function sendAccepted(body: Record<string, unknown>, from: string, userAgent?: string) {
  const res = await beacon(env, body, { from, ...(userAgent ? { headers: { 'user-agent': userAgent } } : {}) });
  expect(res.status).toBe(202);
}

const page = (path: string, session: string, extra: Record<string, unknown> = {}) => ({
  tracking_script_id: site.tracking_script_id,
  type: 'pageview',
  url: `https://${site.domain}${path}`,
  session_id: session,
  ...extra,
});
const engaged = (ms: number, session: string, id: string) => page('/', session, { type: 'engagement', active_ms: ms, beacon_id: id });

async function visitor(ip: string) {
  const [v] = await env.db<{
    visit_count: number;
    pages_viewed: number;
    active_ms: number;
    referrer: string | null;
    intent_page: boolean;
    high_intent: boolean;
    first_before_last: boolean;
  }>`
    select visit_count, pages_viewed, active_ms::int as active_ms, referrer, intent_page, high_intent, first_seen <= last_seen as first_before_last
    from visitors where website_id = ${site.website_id} and ip = ${ip}::inet`;
  return v;
}

beforeAll(async () => {
  env = await createTestEnv();
  const partner = await seedPartner(env.deps, { quota: 100 });
  const child = await createChildVia(env, partner.key, { domain: uniqueDomain('visits') });
  site = { tracking_script_id: child.website.tracking_script_id, domain: child.website.domain, website_id: child.website.id };
});
afterAll(() => env.close());

describe('visits', () => {
  it('counts a visit per session, every page, engaged time once per beacon, and keeps the first outside referrer', async () => {
    const ip = '203.0.113.20';
    await sendAccepted(page('/', 's1', { referrer: `https://${site.domain}/elsewhere` }), ip);
    await sendAccepted(page('/about', 's1', { referrer: 'https://www.google.com/search?q=acme' }), ip);
    await sendAccepted(engaged(20_000, 's1', 'b1'), ip);
    await sendAccepted(engaged(20_000, 's1', 'b1'), ip); // the same beacon, sent again
    await sendAccepted(page('/', 's2', { referrer: 'https://news.example.org/' }), ip);
    const report = await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    expect(report.applied).toBe(4);
    expect(await visitor(ip)).toEqual({
      visit_count: 2,
      pages_viewed: 3,
      active_ms: 20_000,
      referrer: 'https://www.google.com/search?q=acme',
      intent_page: false,
      high_intent: true, // three pages
      first_before_last: true,
    });
  });

  it('ends a session opened before the raw events’ retention: the sweep removes it, and a page view of it after that opens a new visit', async () => {
    const ip = '203.0.113.29';
    await sendAccepted(page('/', 'long-lived'), ip);
    await sendAccepted(page('/', 'recent'), ip);
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    const [opened] = await env.db<{ today: boolean }>`
      select bool_and(opened_on = (now() at time zone 'UTC')::date) as today from visitor_sessions where website_id = ${site.website_id} and ip = ${ip}::inet`;
    expect(opened?.today).toBe(true);
    // The long-lived tab's session was opened 31 days ago (the default retention is 30).
    await env.db`update visitor_sessions set opened_on = opened_on - 31 where website_id = ${site.website_id} and ip = ${ip}::inet and session_id = 'long-lived'`;
    const swept = await sweepDataLifecycle({ ctx: env.deps, input: {} });
    expect(swept.visitor_sessions).toBeGreaterThanOrEqual(1);
    const left = await env.db<{
      session_id: string;
    }>`select session_id from visitor_sessions where website_id = ${site.website_id} and ip = ${ip}::inet`;
    expect(left.map((s) => s.session_id)).toEqual(['recent']);
    await sendAccepted(page('/pricing', 'long-lived'), ip);
    await sendAccepted(page('/pricing', 'recent'), ip);
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    expect(await visitor(ip)).toMatchObject({ visit_count: 3, pages_viewed: 4 });
  });

  it('folds a visitor whose events span several claims as if they were one: a session is one visit, the first referrer stays', async () => {
    const ip = '203.0.113.28';
    await sendAccepted(page('/a', 'span-1', { referrer: 'https://first.example.net/' }), ip);
    await sendAccepted(page('/b', 'span-1', { referrer: 'https://second.example.net/' }), ip);
    await sendAccepted(page('/c', 'span-2'), ip);
    await sendAccepted(page('/d', 'span-1'), ip);
    // One event per claim: each claim meets the visitor again.
    const report = await aggregateTrackerEvents({ ctx: env.deps, input: { batchSize: 1 } });
    expect(report).toEqual({ applied: 4, claims: 4 });
    expect(await visitor(ip)).toMatchObject({ visit_count: 2, pages_viewed: 4, referrer: 'https://first.example.net/', first_before_last: true });
  });

  it('is high intent for a pricing page or a minute of engaged time, and not for one plain page', async () => {
    await sendAccepted(page('/pricing/', 'p1'), '203.0.113.21');
    await sendAccepted(page('/', 'p2'), '203.0.113.22');
    await sendAccepted(engaged(61_000, 'p2', 'b9'), '203.0.113.22');
    await sendAccepted(page('/blog/pricing-tips', 'p3'), '203.0.113.23');
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    expect(await visitor('203.0.113.21')).toMatchObject({ intent_page: true, high_intent: true, pages_viewed: 1 });
    expect(await visitor('203.0.113.22')).toMatchObject({ intent_page: false, high_intent: true, active_ms: 61_000 });
    expect(await visitor('203.0.113.23')).toMatchObject({ intent_page: false, high_intent: false });
  });

  it('never makes a bot a visitor', async () => {
    await sendAccepted(page('/', 'bot'), '203.0.113.24', 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)');
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    expect(await visitor('203.0.113.24')).toBeUndefined();
  });

  it('hands the address to identification: one pending identification per address, website and period', async () => {
    await sendAccepted(page('/z', 'ident'), '203.0.113.27');
    await sendAccepted(page('/z2', 'ident'), '203.0.113.27');
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    await sendAccepted(page('/z3', 'ident-2'), '203.0.113.27');
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    const events = await env.db<{ queued: boolean }>`
      select exists (select 1 from tracker_queue q where q.event_id = t.id) as queued from tracker_events t where t.ip = '203.0.113.27'::inet`;
    expect(events).toEqual(Array(3).fill({ queued: false }));
    const queued = await env.db<{ status: string }>`select status from identifications where ip = '203.0.113.27'::inet`;
    expect(queued).toEqual([{ status: 'pending' }]);
  });

  it('applies each event once, however often the worker runs', async () => {
    await sendAccepted(page('/x', 'once'), '203.0.113.25');
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    expect((await aggregateTrackerEvents({ ctx: env.deps, input: {} })).applied).toBe(0);
    expect((await visitor('203.0.113.25'))?.pages_viewed).toBe(1);
  });

  it('stops at a claim short of a full batch: what arrives after it is the next run’s', async () => {
    for (const n of [1, 2, 3]) await sendAccepted(page('/short', `short-${n}`), `203.0.113.${90 + n}`);
    const { ctx, seen } = countingStatements(env.deps, ['sl_aggregate_tracker_events']);
    expect(await aggregateTrackerEvents({ ctx, input: { batchSize: 2 } })).toEqual({ applied: 3, claims: 2 });
    expect(seen.sl_aggregate_tracker_events).toBe(2);
  });

  it('commits a claim without waiting for its WAL flush, and no other transaction', async () => {
    await sendAccepted(page('/async', 'async'), '203.0.113.90');
    const inClaim = await env.db.begin(async (tx) => {
      const [{ applied }] = (await tx`select sl_aggregate_tracker_events(500) as applied`) as unknown as [{ applied: number }];
      const [{ s }] = (await tx`select current_setting('synchronous_commit') as s`) as unknown as [{ s: string }];
      return { applied, s };
    });
    expect(inClaim).toEqual({ applied: 1, s: 'off' });
    const [after] = await env.db<{ s: string }>`select current_setting('synchronous_commit') as s`;
    expect(after?.s).toBe('on');
    expect((await visitor('203.0.113.90'))?.pages_viewed).toBe(1);
  });
});

/** A second replica's worker: its own connection pool on the same database. */
const otherWorker = () => replicaEnv(env, { pool: 4 });

describe.skipIf(!usingPostgres)('two workers at once (real Postgres)', () => {
  it('a worker that dies mid-claim leaves its events to the next at once, and none of its work', async () => {
    await sendAccepted(page('/y', 'dead'), '203.0.113.26');
    // A worker's claim: folded into the visitor, not yet committed, when its connection dies.
    const dying = postgres(env.url ?? '', { max: 1, onnotice: () => {} });
    try {
      const [{ pid } = { pid: 0 }] = await dying<{ pid: number }[]>`select pg_backend_pid() as pid`;
      await dying`begin`;
      const [claim] = await dying<{ applied: number }[]>`select sl_aggregate_tracker_events(500) as applied`;
      expect(claim?.applied).toBeGreaterThanOrEqual(1);
      // Locked by the live claim: another worker skips the events rather than waiting or counting them.
      expect((await aggregateTrackerEvents({ ctx: env.deps, input: {} })).applied).toBe(0);
      await env.db`select pg_terminate_backend(${pid}::int)`;
    } finally {
      await dying.end({ timeout: 1 }).catch(() => {});
    }
    let applied = 0;
    // The terminated backend's locks go with it, as soon as Postgres has reaped it.
    for (let i = 0; i < 50 && !applied; i++) {
      applied = (await aggregateTrackerEvents({ ctx: env.deps, input: {} })).applied;
      if (!applied) await new Promise((r) => setTimeout(r, 20));
    }
    expect(applied).toBe(1);
    expect((await visitor('203.0.113.26'))?.pages_viewed).toBe(1);
  });

  it('do not deadlock when their backlogs interleave the same visitors', async () => {
    const other = await otherWorker();
    try {
      const ips = ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'];
      for (let round = 0; round < 10; round++) {
        // Interleaved, and split so the second claim starts one visitor later: in event order the
        // first claim meets the visitors 1, 2, 3, 4, 1, … and the second 2, 3, 4, 1, 2, …
        for (let i = 0; i < 122; i++) await sendAccepted(page(`/r${round}`, `r${round}-${i % 4}`), ips[i % 4] as string);
        const [a, b] = await Promise.all([
          aggregateTrackerEvents({ ctx: env.deps, input: { batchSize: 61 } }),
          aggregateTrackerEvents({ ctx: other.deps, input: { batchSize: 61 } }),
        ]);
        expect(a.applied + b.applied).toBe(122);
      }
      const [sum] = await env.db<{ pages: number }>`
        select sum(pages_viewed)::int as pages from visitors where website_id = ${site.website_id} and ip << '192.0.2.0/24'::inet`;
      expect(sum?.pages).toBe(1220);
    } finally {
      await other.close();
    }
  });

  it('share the events, and every page counts exactly once', async () => {
    const ips = Array.from({ length: 40 }, (_, i) => `198.51.100.${i + 1}`);
    for (const ip of ips) for (let p = 0; p < 5; p++) await sendAccepted(page(`/p${p}`, `s-${ip}`), ip);
    const other = await otherWorker();
    const holder = postgres(env.url ?? '', { max: 1, onnotice: () => {} });
    try {
      // Left to the clock, one worker can drain all 200 before the other's first claim (its pool
      // still connecting on a slow machine). Both first claims wait on this lock, each holding
      // events of its own, so both take part on any machine; the rest is theirs to share.
      let run: Promise<AggregationReport[]> = Promise.resolve([]);
      await holder.begin(async (tx) => {
        await tx`lock table visitors in share mode`;
        run = Promise.all([
          aggregateTrackerEvents({ ctx: env.deps, input: { batchSize: 7 } }),
          aggregateTrackerEvents({ ctx: other.deps, input: { batchSize: 7 } }),
        ]);
        await until('both workers to wait on the visitors lock with a claim each', async () => {
          const [w] = await env.db<{ n: number }>`
            select count(*)::int as n from pg_locks where relation = 'visitors'::regclass and not granted`;
          return (w?.n ?? 0) >= 2;
        });
      });
      const [a = { applied: 0 }, b = { applied: 0 }] = await run;
      expect(a.applied + b.applied).toBe(200);
      expect(a.applied).toBeGreaterThan(0);
      expect(b.applied).toBeGreaterThan(0);
      const [sum] = await env.db<{ pages: number; visits: number }>`
        select sum(pages_viewed)::int as pages, sum(visit_count)::int as visits from visitors
        where website_id = ${site.website_id} and ip << '198.51.100.0/24'::inet`;
      expect(sum).toEqual({ pages: 200, visits: 40 });
    } finally {
      await holder.end({ timeout: 1 }).catch(() => {});
      await other.close();
    }
  });
});
