import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { appendTrackerEvent, type TrackerEventRow } from '@sightline/core';
import { allowedMethodsAt, createHostApp, createNodeServer } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, fn, type TestEnv } from './support/app.ts';
import { createChildVia, seedPartner, uniqueDomain } from './support/seed.ts';
import { beacon } from './support/tracker.ts';

/**
 * collect, the tracker's beacon: answered 202 at once with CORS on every answer, appending the event
 * and nothing else; the visitor's address is the one the server saw, never one the request claims;
 * events that do not belong to a live tracker on its own domain are dropped without a word.
 */
let env: TestEnv;
let behindProxy: TestEnv;
let partnerKey = '';
let site = { tracking_script_id: '', domain: '', child: '' };

const VISITOR = '203.0.113.9';

/** The Origin a browser sends with a beacon from the page at `url` (the site's, for a body that names no page). */
function originOf(url: unknown): string {
  try {
    return new URL(String(url)).origin;
  } catch {
    return `https://${site.domain}`;
  }
}

/** A beacon as the tracker sends it (support/tracker.ts), from VISITOR unless `from` says, with its page's Origin. */
const beaconTo = (target: TestEnv, body: Record<string, unknown>, opts: { from?: string; headers?: Record<string, string>; omit?: string[] } = {}) =>
  beacon(target, body, {
    from: opts.from ?? VISITOR,
    headers: { origin: originOf(body.url), ...opts.headers },
    ...(opts.omit ? { omit: opts.omit } : {}),
  });

const pageview = (extra: Record<string, unknown> = {}) => ({
  tracking_script_id: site.tracking_script_id,
  type: 'pageview',
  url: `https://${site.domain}/pricing`,
  referrer: 'https://www.google.com/',
  session_id: 's-1',
  ...extra,
});

async function stored(target: TestEnv = env) {
  // queued: waiting for the tracker worker (bots never are).
  return target.db<{ ip: string; kind: string; is_bot: boolean; queued: boolean; url: string; active_ms: number | null }>`
    select host(t.ip) as ip, t.kind, t.is_bot, q.event_id is not null as queued, t.url, t.active_ms
    from tracker_events t left join tracker_queue q on q.event_id = t.id order by t.id`;
}

beforeAll(async () => {
  env = await createTestEnv();
  partnerKey = (await seedPartner(env.deps, { quota: 100 })).key;
  const child = await createChildVia(env, partnerKey, { domain: uniqueDomain('shop') });
  site = { tracking_script_id: child.website.tracking_script_id, domain: child.website.domain, child: child.child.api_key_id };
  behindProxy = await createTestEnv({ trustedProxies: ['10.0.0.0/8'] });
});
afterAll(async () => {
  await env.close();
  await behindProxy.close();
});

describe('collect', () => {
  it('appends a page view with the socket’s address and answers 202 with CORS headers', async () => {
    await env.db`delete from tracker_events`;
    const res = await beaconTo(env, pageview());
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ success: true });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await stored()).toEqual([
      { ip: VISITOR, kind: 'pageview', is_bot: false, queued: true, url: `https://${site.domain}/pricing`, active_ms: null },
    ]);
  });

  it('ignores an address in the body and a spoofed X-Forwarded-For when no proxy is trusted', async () => {
    await env.db`delete from tracker_events`;
    await beaconTo(env, pageview({ ip: '8.8.8.8' }), { headers: { 'x-forwarded-for': '1.2.3.4' } });
    expect((await stored()).map((e) => e.ip)).toEqual([VISITOR]);
  });

  it('behind a trusted proxy, takes the first untrusted hop from the right, not the leftmost', async () => {
    const c = await createChildVia(behindProxy, (await seedPartner(behindProxy.deps)).key, { domain: uniqueDomain('proxied') });
    const body = { ...pageview(), tracking_script_id: c.website.tracking_script_id, url: `https://${c.website.domain}/` };
    const res = await beaconTo(behindProxy, body, { from: '10.0.0.5', headers: { 'x-forwarded-for': '198.51.100.7, 203.0.113.50, 10.0.0.9' } });
    expect(res.status).toBe(202);
    expect((await stored(behindProxy)).map((e) => e.ip)).toEqual(['203.0.113.50']);
  });

  it('takes pages on the website’s domain and its subdomains, and drops any other host quietly', async () => {
    await env.db`delete from tracker_events`;
    for (const url of [`https://www.${site.domain}/a`, `http://${site.domain.toUpperCase()}/b`]) {
      expect((await beaconTo(env, pageview({ url }))).status).toBe(202);
    }
    for (const url of [`https://evil${site.domain}/`, 'https://elsewhere.example.org/', `ftp://${site.domain}/`, 'not a url']) {
      expect((await beaconTo(env, pageview({ url }))).status).toBe(202);
    }
    expect((await stored()).map((e) => new URL(e.url).pathname)).toEqual(['/a', '/b']);
  });

  it('drops events for an unknown tracker, an inactive website and a revoked key; keeps a suspended child’s', async () => {
    await env.db`delete from tracker_events`;
    expect((await beaconTo(env, pageview({ tracking_script_id: crypto.randomUUID() }))).status).toBe(202);
    const inactive = await createChildVia(env, partnerKey, { domain: uniqueDomain('gone') });
    await env.db`update websites set status = 'inactive' where id = ${inactive.website.id}`;
    await beaconTo(env, { ...pageview(), tracking_script_id: inactive.website.tracking_script_id, url: `https://${inactive.website.domain}/` });
    const revoked = await createChildVia(env, partnerKey, { domain: uniqueDomain('revoked') });
    await env.db`update api_keys set status = 'revoked' where id = ${revoked.child.api_key_id}`;
    await beaconTo(env, { ...pageview(), tracking_script_id: revoked.website.tracking_script_id, url: `https://${revoked.website.domain}/` });
    expect(await stored()).toEqual([]);
    const suspended = await createChildVia(env, partnerKey, { domain: uniqueDomain('paused') });
    await env.db`update api_keys set status = 'suspended', suspended_reason = 'manual' where id = ${suspended.child.api_key_id}`;
    await beaconTo(env, { ...pageview(), tracking_script_id: suspended.website.tracking_script_id, url: `https://${suspended.website.domain}/` });
    expect(await stored()).toHaveLength(1);
  });

  it('records bots (by user agent, or automation the browser admits) as bots, never to identify', async () => {
    await env.db`delete from tracker_events`;
    await beaconTo(env, pageview(), { headers: { 'user-agent': 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' } });
    await beaconTo(env, pageview({ webdriver: true }));
    expect((await stored()).map((e) => [e.is_bot, e.queued])).toEqual([
      [true, false],
      [true, false],
    ]);
  });

  it('stores a beacon without a User-Agent, or with an empty one, as a bot’s: no browser sends none', async () => {
    await env.db`delete from tracker_events`;
    await beaconTo(env, pageview({ session_id: 'no-ua' }), { omit: ['user-agent'] });
    await beaconTo(env, pageview({ session_id: 'empty-ua' }), { headers: { 'user-agent': '' } });
    await beaconTo(env, pageview({ session_id: 'blank-ua' }), { headers: { 'user-agent': '  ' } });
    expect((await stored()).map((e) => [e.is_bot, e.queued])).toEqual([
      [true, false],
      [true, false],
      [true, false],
    ]);
  });

  it('applies an engagement beacon once however often it is sent, and refuses absurd or incomplete ones', async () => {
    await env.db`delete from tracker_events`;
    const engaged = pageview({ type: 'engagement', active_ms: 12_000, beacon_id: 'b-1' });
    expect((await beaconTo(env, engaged)).status).toBe(202);
    expect((await beaconTo(env, engaged)).status).toBe(202);
    expect((await stored()).map((e) => [e.kind, e.active_ms])).toEqual([['engagement', 12_000]]);
    const absurd = await beaconTo(env, pageview({ type: 'engagement', active_ms: 31 * 60_000, beacon_id: 'b-2' }));
    expect(absurd.status).toBe(400);
    expect(absurd.headers.get('access-control-allow-origin')).toBe('*');
    expect((await beaconTo(env, pageview({ type: 'engagement', beacon_id: 'b-3' }))).body.error).toMatch(/active_ms/);
    expect(await stored()).toHaveLength(1);
  });

  it('drops engaged time a page view carries: only engagement beacons add time, once each', async () => {
    await env.db`delete from tracker_events`;
    const res = await beaconTo(env, pageview({ active_ms: 5_000, beacon_id: 'pv-1' }));
    expect(res.status).toBe(202);
    expect((await stored()).map((e) => [e.kind, e.active_ms])).toEqual([['pageview', null]]);
  });

  it('answers a preflight, though the tracker sends text/plain so browsers need none', async () => {
    const res = await env.app.request(fn('collect'), {
      method: 'OPTIONS',
      headers: { origin: 'https://a.example', 'access-control-request-method': 'POST' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('needs no key: an x-access-key is neither required nor read', async () => {
    const res = await call(env, 'collect', { key: 'sl_not_a_key', body: pageview(), headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(202);
  });
});

describe('collect judges the browser’s Origin (or Referer) by the rule the page’s url must pass', () => {
  const FOREIGN = 'https://attacker.example.net';

  it('drops a beacon whose url is on the website but whose Origin is not', async () => {
    await env.db`delete from tracker_events`;
    expect((await beaconTo(env, pageview(), { headers: { origin: FOREIGN } })).status).toBe(202);
    expect((await beaconTo(env, pageview(), { headers: { origin: `https://evil${site.domain}` } })).status).toBe(202);
    // A bot's beacon goes straight to the append (nothing to budget), which holds the same rule.
    expect((await beaconTo(env, pageview({ webdriver: true }), { headers: { origin: FOREIGN } })).status).toBe(202);
    expect(await stored()).toEqual([]);
  });

  it('drops one with no Origin whose Referer is foreign', async () => {
    await env.db`delete from tracker_events`;
    const res = await beaconTo(env, pageview(), { omit: ['origin'], headers: { referer: `${FOREIGN}/page.html` } });
    expect(res.status).toBe(202);
    expect(await stored()).toEqual([]);
  });

  it('drops an opaque origin (Origin: null: a sandboxed iframe, a file:// page), which any page can make a browser send', async () => {
    await env.db`delete from tracker_events`;
    expect((await beaconTo(env, pageview(), { headers: { origin: 'null' } })).status).toBe(202);
    expect((await beaconTo(env, pageview(), { omit: ['origin'], headers: { referer: 'file:///tmp/x.html' } })).status).toBe(202);
    expect(await stored()).toEqual([]);
  });

  it('stores a beacon whose Origin, or Referer without one, is the website or a subdomain (the Origin decides when both are sent)', async () => {
    await env.db`delete from tracker_events`;
    await beaconTo(env, pageview({ session_id: 'o-1' }), { headers: { origin: `https://${site.domain}` } });
    await beaconTo(env, pageview({ session_id: 'o-2' }), { headers: { origin: `https://www.${site.domain}:8443` } });
    await beaconTo(env, pageview({ session_id: 'o-3' }), { omit: ['origin'], headers: { referer: `https://${site.domain}/pricing?x=1` } });
    await beaconTo(env, pageview({ session_id: 'o-4' }), { headers: { origin: `https://${site.domain}`, referer: `${FOREIGN}/` } });
    expect(await stored()).toHaveLength(4);
  });

  it('judges a beacon with neither header (not a browser) by its url alone, as before', async () => {
    await env.db`delete from tracker_events`;
    await beaconTo(env, pageview({ session_id: 'n-1' }), { omit: ['origin'] });
    await beaconTo(env, pageview({ session_id: 'n-2', url: `${FOREIGN}/` }), { omit: ['origin'] });
    expect((await stored()).map((e) => e.url)).toEqual([`https://${site.domain}/pricing`]);
  });

  it('with allowed_domains set, holds the Origin to that list as it holds the url', async () => {
    const c = await createChildVia(env, partnerKey, { domain: uniqueDomain('listed') });
    await env.db`update accounts set allowed_domains = ${`{www.${c.website.domain}}`}::text[]
                 where id = (select account_id from api_keys where id = ${c.child.api_key_id})`;
    await env.db`delete from tracker_events`;
    const body = (session: string) => ({
      ...pageview(),
      session_id: session,
      tracking_script_id: c.website.tracking_script_id,
      url: `https://www.${c.website.domain}/`,
    });
    // The website's own domain is not on the list: its Origin is refused like its url would be.
    await beaconTo(env, body('l-1'), { headers: { origin: `https://${c.website.domain}` } });
    await beaconTo(env, body('l-2'), { headers: { origin: `https://www.${c.website.domain}` } });
    expect((await stored()).map((e) => e.url)).toEqual([`https://www.${c.website.domain}/`]);
  });
});

describe('collect over a real socket', () => {
  let server: Server;
  beforeAll(async () => {
    const app = createHostApp(env.deps);
    server = createNodeServer({ fetch: app.fetch, log: env.deps.log, allowedMethods: allowedMethodsAt });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('stores the socket peer the Node host saw', async () => {
    await env.db`delete from tracker_events`;
    const port = (server.address() as AddressInfo).port;
    const res = await fetch(`http://127.0.0.1:${port}/functions/v1/collect`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-forwarded-for': '8.8.8.8' },
      body: JSON.stringify(pageview()),
    });
    expect(res.status).toBe(202);
    expect((await stored()).map((e) => e.ip)).toEqual(['127.0.0.1']);
  });
});

describe('collect’s group commit', () => {
  const distinctTransactions = async (sessionPrefix: string) =>
    (
      await env.db<{ n: number }>`
        select count(distinct xmin::text)::int as n from tracker_events where session_id like ${`${sessionPrefix}%`}`
    )[0]?.n ?? 0;

  it('answers each beacon only once its own event is committed, and concurrent beacons share transactions', async () => {
    await env.db`delete from tracker_events`;
    const N = 60;
    const seen = await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const res = await beaconTo(env, pageview({ session_id: `gc-${i}` }));
        // Read at once, on another connection: the 202 came after the commit, not before.
        const [row] = await env.db<{ n: number }>`select count(*)::int as n from tracker_events where session_id = ${`gc-${i}`}`;
        return [res.status, row?.n];
      }),
    );
    expect(seen).toEqual(Array.from({ length: N }, () => [202, 1]));
    // Sixty requests at once do not make sixty commits.
    expect(await distinctTransactions('gc-')).toBeLessThan(N / 2);
  });

  it('stores each engagement beacon once when its copies land in concurrent batches in any order', async () => {
    await env.db`delete from tracker_events`;
    const copies = Array.from({ length: 48 }, (_, i) => (i * 7) % 6);
    const statuses = await Promise.all(
      copies.map((b) => beaconTo(env, pageview({ type: 'engagement', session_id: 'gc-dup', beacon_id: `b-${b}`, active_ms: 4_000 + b }))),
    );
    expect(statuses.every((r) => r.status === 202)).toBe(true);
    const rows = await env.db<{ beacon_id: string; active_ms: number }>`
      select beacon_id, active_ms from tracker_events where session_id = 'gc-dup' order by beacon_id`;
    expect(rows).toEqual(Array.from({ length: 6 }, (_, b) => ({ beacon_id: `b-${b}`, active_ms: 4_000 + b })));
  });

  it('copies of one beacon in one batch: the first is stored and queued for the worker, the rest report not stored', async () => {
    await env.db`delete from tracker_events`;
    const row = (session: string, beaconId: string | null): TrackerEventRow => ({
      tracking_script_id: site.tracking_script_id,
      kind: beaconId ? 'engagement' : 'pageview',
      page_host: site.domain,
      ip: VISITOR,
      is_bot: false,
      session_id: session,
      url: `https://${site.domain}/`,
      referrer: null,
      active_ms: beaconId ? 3_000 : null,
      beacon_id: beaconId,
      user_agent: null,
    });
    // The first two go at once, one statement each; the three copies wait and share the next one.
    const results = await Promise.all(
      [row('gc-one-a', null), row('gc-one-b', null), row('gc-one', 'b-1'), row('gc-one', 'b-1'), row('gc-one', 'b-1')].map((r) =>
        appendTrackerEvent(env.deps, r),
      ),
    );
    expect(results).toEqual([true, true, true, false, false]);
    expect(await distinctTransactions('gc-one')).toBe(3);
    const rows = await env.db<{ session_id: string; queued: boolean }>`
      select t.session_id, exists (select 1 from tracker_queue q where q.event_id = t.id) as queued
      from tracker_events t where t.session_id like 'gc-one%' order by t.session_id`;
    expect(rows).toEqual([
      { session_id: 'gc-one', queued: true },
      { session_id: 'gc-one-a', queued: true },
      { session_id: 'gc-one-b', queued: true },
    ]);
    // Sent again later, alone: already stored.
    expect(await appendTrackerEvent(env.deps, row('gc-one', 'b-1'))).toBe(false);
  });

  it('an event the database refuses fails alone; the rest of its batch is stored', async () => {
    await env.db`delete from tracker_events`;
    const row = (i: number, ip = VISITOR): TrackerEventRow => ({
      tracking_script_id: site.tracking_script_id,
      kind: 'pageview',
      page_host: site.domain,
      ip,
      is_bot: false,
      session_id: `gc-bad-${i}`,
      url: `https://${site.domain}/`,
      referrer: null,
      active_ms: null,
      beacon_id: null,
      user_agent: null,
    });
    // The first two go at once, one statement each; the other four wait and share the next one.
    const results = await Promise.allSettled(
      [0, 1, 2, 3, 4, 5].map((i) => appendTrackerEvent(env.deps, row(i, i === 4 ? 'not an address' : VISITOR))),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(results.filter((r) => r.status === 'fulfilled').every((r) => r.value === true)).toBe(true);
    const rows = await env.db<{ session_id: string }>`select session_id from tracker_events where session_id like 'gc-bad-%' order by session_id`;
    expect(rows.map((r) => r.session_id)).toEqual(['gc-bad-0', 'gc-bad-1', 'gc-bad-2', 'gc-bad-3', 'gc-bad-5']);
  });
});
