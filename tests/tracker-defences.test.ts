import {
  connectRedis,
  createTrackerBudgets,
  parseEnv,
  type SharedRedis,
  silentLogger,
  type TrackerBudgetPolicy,
  workTrackerQueue,
} from '@sightline/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressBudgetKey, flushFilteredBeacons } from '../packages/core/src/tracker/beacon-budgets.ts';
import { createTestEnv, fn, replicaEnv, socketPeer, type TestEnv } from './support/app.ts';
import { realIpDeps } from './support/ip.ts';
import { seedPartner } from './support/seed.ts';
import { beacon, type TrackedSite, trackedChild } from './support/tracker.ts';
import { clearOfWindowEnd } from './support/wait.ts';

/**
 * What a tracking id lets a stranger spend. The id is public (it is in every page of the site), so
 * collect's defences are what stand between it and the owner's IDs: a beacon without a user agent
 * is a bot's; one client address has a budget of beacons a minute; a website has a budget of new
 * visitors' beacons a minute (returning visitors' are never counted). Over a budget, a beacon is
 * answered as any other (202) and counted as filtered. Counted where the owner counts them: IDs
 * used in the child's subscription, identifications and events in the database.
 *
 * Addresses: 17.x is Apple's own network, a business in the shipped data, so each new address on a
 * website is an identification that uses an ID.
 */
const APPLE = (n: number) => `17.${Math.floor(n / 62_500) + 100}.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;

let env: TestEnv;
let partnerKey = '';
/** When the suite runs with REDIS_URL: the budgets are counted there, as on a fleet. */
let redis: SharedRedis | undefined;
/** A key prefix of this run's own, so counts of an earlier run (or another suite) cannot meet these. */
const RUN = `sl:test:${crypto.randomUUID()}:`;

beforeAll(async () => {
  env = await createTestEnv({ ip: realIpDeps(), pool: 8 });
  partnerKey = (await seedPartner(env.deps, { quota: 1_000_000 })).key;
  if (process.env.REDIS_URL) redis = connectRedis(Redis, process.env.REDIS_URL, silentLogger);
}, 60_000);
afterAll(async () => {
  await env.close();
  await redis?.close();
});

/** Budgets for the next test, fresh (in Redis when the suite has it, under a prefix of their own). */
function budgets(policy: Partial<TrackerBudgetPolicy>, target: TestEnv = env) {
  const b = createTrackerBudgets(
    { beaconsPerAddressPerMinute: 1_000_000, newVisitorBeaconsPerWebsitePerMinute: 1_000_000, ...policy },
    redis,
    `${RUN}${crypto.randomUUID()}:`,
  );
  target.deps.trackerBudgets = b;
  return b;
}

const site = (quota: number) => trackedChild(env, partnerKey, { monthly_id_quota: quota });

/** A page view through collect from `ip`, as a browser sends it (support/tracker.ts) unless `headers` say otherwise. */
async function pageBeacon(target: TestEnv, s: TrackedSite, ip: string, opts: { headers?: Record<string, string>; session?: string } = {}) {
  const body = { tracking_script_id: s.trackingId, type: 'pageview', url: `https://${s.domain}/pricing`, session_id: opts.session ?? `s-${ip}` };
  const res = await beacon(target, body, { from: ip, headers: { origin: `https://${s.domain}`, ...opts.headers } });
  return { status: res.status, body: res.body, cors: res.headers.get('access-control-allow-origin') };
}

/** Runs the tracker worker until it has nothing left: every stored beacon folded, every identification settled. */
async function drain() {
  for (;;) {
    const r = await workTrackerQueue({ ctx: env.deps, input: {} });
    if (r.visits.applied === 0 && r.identifications.identified + r.identifications.failed + r.identifications.dropped === 0) return;
  }
}

async function counts(s: TrackedSite) {
  await flushFilteredBeacons(env.deps);
  const [row] = await env.db<{ used: number; stored: number; bots: number; identified: number; identifications: number }>`
    select (select ids_used_this_period from child_subscriptions where api_key_id = ${s.apiKeyId}) as used,
           (select count(*)::int from tracker_events where website_id = ${s.websiteId}) as stored,
           (select count(*)::int from tracker_events where website_id = ${s.websiteId} and is_bot) as bots,
           (select count(*)::int from identifications where website_id = ${s.websiteId} and status = 'identified') as identified,
           (select count(*)::int from identifications where website_id = ${s.websiteId}) as identifications`;
  const filtered = await env.db<{ reason: string; beacons: number }>`
    select reason, beacons::int from tracker_filtered_beacons where website_id = ${s.websiteId} order by reason`;
  return { ...row, filtered: Object.fromEntries(filtered.map((f) => [f.reason, f.beacons])) };
}

describe('the budgets’ settings', () => {
  it('default to 120 beacons per address and 60 new visitors’ beacons per website a minute, and refuse what is not a positive whole number', () => {
    expect(parseEnv({})).toMatchObject({ TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE: 120, TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE: 60 });
    expect(parseEnv({ TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE: '300', TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE: '5' })).toMatchObject({
      TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE: 300,
      TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE: 5,
    });
    expect(() => parseEnv({ TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE: '0' })).toThrow(/TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE/);
    expect(() => parseEnv({ TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE: 'many' })).toThrow(
      /TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE/,
    );
  });
});

describe('a beacon without a user agent', () => {
  it('is a bot’s, whether the header is missing, empty or blank: stored as a bot, never identified, no ID used', async () => {
    budgets({});
    const s = await site(10);
    const noUa = new Headers({ 'content-type': 'text/plain', origin: `https://${s.domain}` });
    const res = await env.app.request(
      fn('collect'),
      {
        method: 'POST',
        headers: noUa,
        body: JSON.stringify({ tracking_script_id: s.trackingId, type: 'pageview', url: `https://${s.domain}/`, session_id: 'no-ua' }),
      },
      socketPeer(APPLE(1)),
    );
    expect(res.status).toBe(202);
    expect((await pageBeacon(env, s, APPLE(2), { headers: { 'user-agent': '' } })).status).toBe(202);
    expect((await pageBeacon(env, s, APPLE(3), { headers: { 'user-agent': '   ' } })).status).toBe(202);
    await drain();
    expect(await counts(s)).toMatchObject({ stored: 3, bots: 3, identifications: 0, used: 0, filtered: { bot: 3 } });
    // The same addresses with a browser's user agent are visitors: the difference is the header alone.
    for (const n of [1, 2, 3]) await pageBeacon(env, s, APPLE(n));
    await drain();
    expect(await counts(s)).toMatchObject({ stored: 6, bots: 3, identified: 3, used: 3 });
  });
});

describe('the per-website budget of new visitors', () => {
  it('a burst of 500 business addresses in seconds: without it the quota is gone; with it at most the budget is used', async () => {
    const BURST = 500;
    const BUDGET = 20;
    // Before: no effective budget. Every address is a new business visitor, each identification an ID.
    budgets({});
    const open = await site(100);
    const started = Date.now();
    await Promise.all(Array.from({ length: BURST }, (_, n) => pageBeacon(env, open, APPLE(n))));
    await drain();
    const burned = Date.now() - started;
    const before = await counts(open);
    expect(before).toMatchObject({ stored: BURST, used: 100, identified: 100 });

    // After: the same burst against a budget of 20 new visitors' beacons a minute (all in one window).
    await clearOfWindowEnd(20_000);
    budgets({ newVisitorBeaconsPerWebsitePerMinute: BUDGET });
    const guarded = await site(100);
    const answers = await Promise.all(Array.from({ length: BURST }, (_, n) => pageBeacon(env, guarded, APPLE(n))));
    // Answered like any beacon: a browser has nothing to retry, an attacker nothing to probe.
    expect(answers.every((a) => a.status === 202 && a.cors === '*' && (a.body as { success: boolean }).success)).toBe(true);
    await drain();
    const after = await counts(guarded);
    expect(after).toMatchObject({ stored: BUDGET, used: BUDGET, identified: BUDGET, filtered: { website_budget: BURST - BUDGET } });
    console.info(
      `burst of ${BURST} new business addresses: IDs used ${before.used} (no budget, quota 100, all used ${burned} ms after the first beacon) → ${after.used} (budget ${BUDGET}/min)`,
    );
  }, 60_000);

  it('counts only new visitors: once identified, a visitor’s beacons are never refused, while a new one is', async () => {
    await clearOfWindowEnd(20_000);
    budgets({ newVisitorBeaconsPerWebsitePerMinute: 3 });
    const s = await site(100);
    for (const n of [1, 2, 3]) await pageBeacon(env, s, APPLE(1_000 + n));
    await drain();
    expect(await counts(s)).toMatchObject({ stored: 3, identified: 3 });
    // The budget is spent for this minute: a fourth new address is refused ...
    await pageBeacon(env, s, APPLE(1_004));
    // ... and the three visitors' further pages are all kept.
    for (let page = 0; page < 20; page++) for (const n of [1, 2, 3]) await pageBeacon(env, s, APPLE(1_000 + n), { session: `p-${page}` });
    await drain();
    expect(await counts(s)).toMatchObject({ stored: 63, identified: 3, used: 3, filtered: { website_budget: 1 } });
  });

  it('takes a new address in an identified IPv6 /64 as a returning visitor: the /64 is the visitor', async () => {
    await clearOfWindowEnd(20_000);
    budgets({ newVisitorBeaconsPerWebsitePerMinute: 1 });
    const s = await site(100);
    // Apple's own IPv6 network (a business in the shipped data).
    await pageBeacon(env, s, '2403:300:a01:7::1');
    await drain();
    expect(await counts(s)).toMatchObject({ identified: 1, used: 1 });
    // The website's budget for new visitors is spent, yet other addresses of the same /64 are kept:
    // they use no ID, so there is nothing for the budget to guard.
    for (let n = 2; n <= 6; n++) await pageBeacon(env, s, `2403:300:a01:7::${n}`);
    // A new /64 is a new visitor, and is refused.
    await pageBeacon(env, s, '2403:300:a01:8::1');
    await drain();
    expect(await counts(s)).toMatchObject({ stored: 6, identifications: 1, used: 1, filtered: { website_budget: 1 } });
  });

  it('does not count bots, whose beacons are never identified', async () => {
    await clearOfWindowEnd(20_000);
    budgets({ newVisitorBeaconsPerWebsitePerMinute: 1 });
    const s = await site(100);
    for (let n = 0; n < 5; n++) await pageBeacon(env, s, APPLE(1_100 + n), { headers: { 'user-agent': 'curl/8.5.0' } });
    await pageBeacon(env, s, APPLE(1_200));
    await drain();
    expect(await counts(s)).toMatchObject({ stored: 6, bots: 5, identified: 1, used: 1 });
  });
});

describe('the per-address budget', () => {
  it('one address sending 1,000 beacons is cut at the budget; other addresses are not', async () => {
    await clearOfWindowEnd(20_000);
    budgets({ beaconsPerAddressPerMinute: 50 });
    const s = await site(100);
    const flood = APPLE(2_000);
    for (let batch = 0; batch < 10; batch++) {
      const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => pageBeacon(env, s, flood, { session: `f-${batch}-${i}` })));
      expect(answers.every((a) => a.status === 202)).toBe(true);
    }
    expect((await pageBeacon(env, s, APPLE(2_001))).status).toBe(202);
    await drain();
    expect(await counts(s)).toMatchObject({ stored: 51, identified: 2, used: 2, filtered: { address_budget: 950 } });
  });

  it('counts an IPv6 client by its /64, which one subscriber holds whole', async () => {
    expect(addressBudgetKey('2001:db8:1:2:aaaa::1')).toBe(addressBudgetKey('2001:db8:1:2:ffff:1:2:3'));
    expect(addressBudgetKey('2001:db8:1:3::1')).not.toBe(addressBudgetKey('2001:db8:1:2::1'));
    expect(addressBudgetKey('203.0.113.9')).toBe('203.0.113.9');
    await clearOfWindowEnd(20_000);
    budgets({ beaconsPerAddressPerMinute: 2 });
    const s = await site(100);
    for (const suffix of ['1', '2', '3', 'ffff:1']) await pageBeacon(env, s, `2a00:1450:4001:81c::${suffix}`);
    await pageBeacon(env, s, '2a00:1450:4001:81d::1');
    expect(await counts(s)).toMatchObject({ stored: 3, filtered: { address_budget: 2 } });
  });
});

describe('a batch of status reads (sl_tracker_visitor_status)', () => {
  it('answers each beacon of a mixed batch as it would be answered alone', async () => {
    budgets({});
    const [a, b] = [await site(100), await site(100)];
    // An address identified on a, and so a returning visitor there only.
    await pageBeacon(env, a, APPLE(4_000));
    await drain();
    const beaconOf = (s: TrackedSite, ip: string, page_host = s.domain, origin_host: string | null = s.domain) => ({
      tracking_script_id: s.trackingId,
      page_host,
      origin_host,
      ip,
    });
    const cases = [
      { beacon: beaconOf(a, APPLE(4_000)), accepted: true, candidate: false },
      { beacon: beaconOf(a, APPLE(4_001)), accepted: true, candidate: true },
      { beacon: beaconOf(a, APPLE(4_002), `www.${a.domain}`, null), accepted: true, candidate: true },
      { beacon: beaconOf(a, APPLE(4_003), 'elsewhere.example'), accepted: false, candidate: false },
      { beacon: beaconOf(a, APPLE(4_004), a.domain, 'elsewhere.example'), accepted: false, candidate: false },
      { beacon: beaconOf(b, APPLE(4_000)), accepted: true, candidate: true },
      { beacon: beaconOf(b, APPLE(4_005)), accepted: true, candidate: true },
      { beacon: { ...beaconOf(b, APPLE(4_006)), tracking_script_id: crypto.randomUUID() }, accepted: false, candidate: false },
    ];
    const read = (beacons: object[]) =>
      env.db<{ n: number; accepted: boolean; candidate: boolean }>`
        select n, accepted, candidate from sl_tracker_visitor_status(${JSON.stringify(beacons)}::text::jsonb) order by n`;
    const batch = await read(cases.map((c, n) => ({ n, ...c.beacon })));
    expect(batch.map(({ accepted, candidate }) => ({ accepted, candidate }))).toEqual(
      cases.map(({ accepted, candidate }) => ({ accepted, candidate })),
    );
    for (const [n, c] of cases.entries()) expect((await read([{ n, ...c.beacon }]))[0]).toEqual(batch[n]);
  });
});

describe.skipIf(!process.env.REDIS_URL)('budgets across replicas (REDIS_URL)', () => {
  it('two processes on one Redis share one count per website and one per address', async () => {
    // A second process over the same database: its own app, deps and in-process state.
    const other = await replicaEnv(env, { ip: realIpDeps() });
    try {
      await clearOfWindowEnd(20_000);
      const prefix = `${RUN}${crypto.randomUUID()}:`;
      const policy = { beaconsPerAddressPerMinute: 30, newVisitorBeaconsPerWebsitePerMinute: 10 };
      env.deps.trackerBudgets = createTrackerBudgets(policy, redis, prefix);
      other.deps.trackerBudgets = createTrackerBudgets(policy, redis, prefix);
      const replica = (i: number) => (i % 2 === 0 ? env : other);
      // 100 new visitors, every other one through each process: 10 kept in all, not 10 each.
      const visited = await site(100);
      await Promise.all(Array.from({ length: 100 }, (_, n) => pageBeacon(replica(n), visited, APPLE(3_000 + n))));
      // One address's 100 beacons (a bot's, which the website's budget does not count): 30 kept in all.
      const flooded = await site(100);
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          pageBeacon(replica(i), flooded, '198.51.100.77', { session: `r-${i}`, headers: { 'user-agent': 'curl/8.5.0' } }),
        ),
      );
      await flushFilteredBeacons(other.deps);
      await drain();
      expect(await counts(visited)).toMatchObject({ stored: 10, used: 10, filtered: { website_budget: 90 } });
      expect(await counts(flooded)).toMatchObject({ stored: 30, bots: 30, filtered: { address_budget: 70, bot: 30 } });
    } finally {
      await other.close();
    }
  });
});
