import { grantCredits, workTrackerQueue } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListVisitorsResponse } from '../functions/list-visitors/route.ts';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { realIpDeps, tableProvider } from './support/ip.ts';
import { seedDirectKey, seedPartner, uniqueDomain } from './support/seed.ts';
import { pageView, type TrackedSite, trackedChild } from './support/tracker.ts';
import { seedVisitors, type VisitorSeed } from './support/visitors.ts';

/**
 * list-visitors and identification-list over data made the way production makes it: beacons
 * through collect, the tracker worker, and ip-to-company calls.
 */
const APPLE = (n: number) => `17.253.200.${n}`;
const GERMAN = '194.39.131.1';
const sap = tableProvider('alpha', { [GERMAN]: { domain: 'sap.com', company_name: 'SAP SE', confidence: 0.9, traffic_type: 'business' } });
const sap2 = tableProvider('beta', { [GERMAN]: { domain: 'sap.com', company_name: 'SAP SE', confidence: 0.9, traffic_type: 'business' } });

let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;
type Site = TrackedSite;
let a: Site;
let b: Site;
let own: Site;

const visit = (site: Site, ip: string, path = '/', session = `s-${ip}`) => pageView(env, site, ip, { path, session });

const list = (key: string, query: Record<string, string> = {}) => call(env, 'list-visitors', { key, query });
const visitorsOf = (body: Json) => body.visitors as Json[];

beforeAll(async () => {
  env = await createTestEnv({ ip: realIpDeps({ providers: [sap.provider, sap2.provider], timeoutMs: 300 }) });
  partner = await seedPartner(env.deps, { quota: 1000 });
  const mk = (label: string) => trackedChild(env, partner.key, { domain: uniqueDomain(label), monthly_id_quota: 100 });
  a = await mk('list-a');
  b = await mk('list-b');
  const d = await seedDirectKey(env.deps, partner.account_id);
  const [w] = await env.db<{ domain: string }>`select domain from websites where id = ${d.website_id}`;
  own = { key: d.key, apiKeyId: d.api_key_id, trackingId: d.tracking_script_id, domain: w?.domain ?? '', websiteId: d.website_id };

  // Site A: five Apple visitors (one with three pages), a German business, and an ISP visitor (never listed).
  for (let n = 1; n <= 5; n++) await visit(a, APPLE(n));
  await visit(a, APPLE(1), '/two');
  await visit(a, APPLE(1), '/pricing');
  await visit(a, GERMAN);
  await visit(a, '80.128.0.1');
  await visit(b, APPLE(1));
  await visit(own, APPLE(9));
  await workTrackerQueue({ ctx: env.deps, input: {} });
  // One visitor last seen 40 days ago: outside the default window.
  await env.db`update visitors set last_seen = now() - interval '40 days', first_seen = now() - interval '41 days'
               where website_id = ${a.websiteId} and ip = ${APPLE(5)}::inet`;
});
afterAll(() => env.close());

describe('list-visitors', () => {
  it('lists the identified visitors of the key’s trackers in the last 30 days, newest first, with every row field', async () => {
    const res = await list(a.key);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, count: 5, total: 5, limit: 100, offset: 0, source: 'all' });
    const rows = visitorsOf(res.body);
    expect(rows.map((r) => r.ip).sort()).toEqual([APPLE(1), APPLE(2), APPLE(3), APPLE(4), GERMAN].sort());
    const lastSeen = rows.map((r) => String(r.last_seen));
    expect([...lastSeen].sort().reverse()).toEqual(lastSeen);
    const first = rows.find((r) => r.ip === APPLE(1)) as Json;
    expect(first).toEqual({
      ip: APPLE(1),
      source: 'tracker',
      identification_type: 'company',
      display_name: 'Apple Inc.',
      person_linkedin_url: null,
      person_linkedin_name: null,
      person_linkedin_title: null,
      person_linkedin_company: null,
      domain: 'apple.com',
      company_name: 'Apple Inc.',
      company_linkedin_url: null,
      confidence: expect.any(Number),
      last_seen: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      first_seen: expect.stringMatching(/Z$/),
      visit_count: 1,
      pages_viewed: 3,
      active_seconds: 0,
      tracker_site: a.domain,
      country: 'US',
      industry: null,
      employees: null,
      high_intent: true,
      raw_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      lookup_count: 1,
      sites_visited: [a.domain], // site B saw the address too, but it is another child's
      is_watched: false,
      is_pinned: false,
      crm_status: null,
      crm_id: null,
    });
  });

  it('takes since, and pages with count and total over the whole set', async () => {
    const all = await list(a.key, { since: new Date(Date.now() - 60 * 86_400_000).toISOString() });
    expect(all.body).toMatchObject({ total: 6, count: 6 });
    const p1 = await list(a.key, { since: '2000-01-01', limit: '4' });
    const p2 = await list(a.key, { since: '2000-01-01', limit: '4', offset: '4' });
    const past = await list(a.key, { since: '2000-01-01', limit: '4', offset: '40' });
    expect(p1.body).toMatchObject({ count: 4, total: 6, limit: 4 });
    expect(p2.body).toMatchObject({ count: 2, total: 6, offset: 4 });
    expect(past.body).toMatchObject({ count: 0, total: 6, visitors: [] });
    const ips = [...visitorsOf(p1.body), ...visitorsOf(p2.body)].map((r) => r.ip);
    expect(new Set(ips).size).toBe(6);
    const future = await list(a.key, { since: new Date(Date.now() + 86_400_000).toISOString() });
    expect(future.body).toMatchObject({ count: 0, total: 0 });
  });

  it('searches case-insensitively over display name, domain, company and IP, wildcards taken literally', async () => {
    expect(visitorsOf((await list(a.key, { search: 'SAP' })).body).map((r) => r.ip)).toEqual([GERMAN]);
    expect((await list(a.key, { search: 'APPLE.COM' })).body).toMatchObject({ total: 4 });
    expect(visitorsOf((await list(a.key, { search: APPLE(3) })).body).map((r) => r.ip)).toEqual([APPLE(3)]);
    expect((await list(a.key, { search: '%' })).body).toMatchObject({ total: 0 });
    expect((await list(a.key, { search: 'nobody-at-all' })).body).toMatchObject({ total: 0 });
  });

  it('matches an address by its beginning (a network as typed), not by a fragment inside it', async () => {
    expect((await list(a.key, { search: '17.253.200' })).body).toMatchObject({ total: 4 });
    expect((await list(a.key, { search: '194.39.' })).body).toMatchObject({ total: 1 });
    expect((await list(a.key, { search: '253.200' })).body).toMatchObject({ total: 0 });
  });

  it('keeps one search label per distinct name, shared by every visitor of the company', async () => {
    const [labels] = await env.db<{ rows: number; distinct_labels: number; labelled: number }>`
      select count(*)::int as rows, count(distinct label_id)::int as distinct_labels, count(label_id)::int as labelled
      from visitors where website_id = ${a.websiteId} and identification_id is not null`;
    expect(labels).toEqual({ rows: 6, distinct_labels: 2, labelled: 6 });
    const texts = await env.db<{ label: string }>`
      select l.label from search_labels l where l.id in (select label_id from visitors where website_id = ${a.websiteId}) order by l.label`;
    expect(texts.map((t) => t.label)).toEqual([expect.stringContaining('apple'), 'sap se sap.com']);
  });

  it('scopes to the key’s trackers: tracker_site narrows, another child sees only its own, the master key sees the partner’s own trackers', async () => {
    expect((await list(a.key, { tracker_site: b.domain })).body).toMatchObject({ total: 0 });
    expect((await list(a.key, { tracker_site: a.domain.toUpperCase() })).body).toMatchObject({ total: 5 });
    const other = await list(b.key);
    expect(visitorsOf(other.body).map((r) => [r.ip, r.tracker_site])).toEqual([[APPLE(1), b.domain]]);
    const master = await list(partner.key);
    expect(visitorsOf(master.body).map((r) => [r.ip, r.tracker_site])).toEqual([[APPLE(9), own.domain]]);
  });

  it('lists the key’s own identified lookups as api rows, once per address, and not again when a tracker saw it', async () => {
    await grantCredits({ ctx: env.deps, input: { accountId: (await accountOf(a.apiKeyId)) ?? '', credits: 50 } });
    for (const ip of ['17.253.201.1', '17.253.201.1', APPLE(2), '80.128.0.1']) {
      expect((await call(env, 'ip-to-company', { key: a.key, body: { ip } })).status).toBe(200);
    }
    const api = await list(a.key, { source: 'api' });
    expect(api.body).toMatchObject({ source: 'api', total: 2 });
    const lookedUp = visitorsOf(api.body).find((r) => r.ip === '17.253.201.1') as Json;
    expect(lookedUp).toMatchObject({
      source: 'api',
      identification_type: 'company',
      domain: 'apple.com',
      lookup_count: 2,
      tracker_site: null,
      visit_count: 0,
    });
    // Asked for api rows alone, the address a tracker saw is an api row that names the site it visited.
    expect(visitorsOf(api.body).find((r) => r.ip === APPLE(2))).toMatchObject({ source: 'api', sites_visited: [a.domain] });
    expect(lookedUp.sites_visited).toEqual([]);
    const all = await list(a.key);
    expect(all.body).toMatchObject({ total: 6 }); // the 5 tracker rows, plus 17.253.201.1; APPLE(2) is a tracker row already
    expect(
      visitorsOf(all.body)
        .filter((r) => r.ip === APPLE(2))
        .map((r) => r.source),
    ).toEqual(['tracker']);
    expect((await list(a.key, { source: 'tracker' })).body).toMatchObject({ total: 5 });
  });

  it('answers bodies that parse with the documented schema, as Postgres writes them, a page past the end included', async () => {
    const queries: Record<string, string>[] = [
      {},
      { search: 'apple' },
      { source: 'api' },
      { offset: '400' },
      { search: 'no such company' },
      { limit: '1' },
    ];
    for (const query of queries) {
      const res = await list(a.key, query);
      expect(res.status, JSON.stringify(query)).toBe(200);
      expect(res.headers.get('content-type'), JSON.stringify(query)).toMatch(/^application\/json/);
      const body = ListVisitorsResponse.parse(res.body);
      expect(body.count, JSON.stringify(query)).toBe(body.visitors.length);
    }
    expect((await list(a.key, { offset: '400', source: 'tracker' })).body).toMatchObject({ count: 0, total: 5, visitors: [] });
  });

  it('is read by a suspended key; refuses a missing or unknown key and bad parameters without a 500', async () => {
    await env.db`update api_keys set status = 'suspended', suspended_reason = 'manual' where id = ${b.apiKeyId}`;
    await env.authSync();
    expect((await list(b.key)).body).toMatchObject({ total: 1 });
    expect((await call(env, 'list-visitors', {})).status).toBe(401);
    expect((await list('sl_live_nope')).status).toBe(401);
    const bad: Record<string, string>[] = [
      { limit: '0' },
      { limit: '501' },
      { offset: '-1' },
      { source: 'web' },
      { since: 'yesterday' },
      { tracker_site: 'https://x.com' },
    ];
    for (const query of bad) {
      const res = await list(a.key, query);
      expect(res.status, JSON.stringify(query)).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: expect.any(String) });
    }
  });
  it('reads decimal integers and real calendar dates only, naming each problem once', async () => {
    const refused: [Record<string, string>, RegExp][] = [
      [{ since: '2026-02-30' }, /^since: must be an ISO 8601 date or date-time on the calendar$/],
      [{ since: '2025-02-29T10:00:00Z' }, /^since: must be an ISO 8601 date or date-time on the calendar$/],
      [{ since: '2026-11-01T24:00:00Z' }, /^since: must be an ISO 8601 date or date-time on the calendar$/],
      [{ since: '2026-13-01' }, /^since: must be an ISO 8601 date or date-time on the calendar$/],
      [{ since: 'yesterday' }, /^since: must be an ISO 8601 date or date-time on the calendar$/],
      [{ limit: '0x10' }, /^limit: must be a number written in decimal digits$/],
      [{ limit: '1e2' }, /^limit: must be a number written in decimal digits$/],
      [{ limit: '+5' }, /^limit: must be a number written in decimal digits$/],
      [{ limit: ' 5' }, /^limit: must be a number written in decimal digits$/],
      [{ limit: '' }, /^limit: must be a number written in decimal digits$/],
      [{ offset: '1e2' }, /^offset: must be a number written in decimal digits$/],
      [{ offset: '0x10' }, /^offset: must be a number written in decimal digits$/],
      [{ offset: '1.5' }, /^offset: must be a whole number$/],
    ];
    for (const [query, error] of refused) {
      const res = await list(a.key, query);
      expect(res.status, JSON.stringify(query)).toBe(400);
      expect((res.body as { error: string }).error, JSON.stringify(query)).toMatch(error);
    }
    // The real ones still read: a leap day, a date-time with an offset, leading zeros.
    const accepted: Record<string, string>[] = [{ since: '2024-02-29' }, { since: '2026-11-01T09:30:00+01:00' }, { limit: '010', offset: '00' }];
    for (const query of accepted) {
      expect((await list(a.key, query)).status, JSON.stringify(query)).toBe(200);
    }
  });
});

async function accountOf(apiKeyId: string) {
  const [k] = await env.db<{ account_id: string }>`select account_id from api_keys where id = ${apiKeyId}`;
  return k?.account_id;
}

describe('identification-list', () => {
  const ids = (key: string, query: Record<string, string>) =>
    env.app.request(`http://localhost/identification-list?${new URLSearchParams(query)}`, { headers: { 'x-access-key': key } });

  it('lists a website’s identifications with the company, session and empty icp_scores', async () => {
    const res = await ids(a.key, { website_id: a.websiteId });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { identifications: Json[] };
    expect(body.identifications).toHaveLength(7);
    const apple = body.identifications.find((i) => (i.company as Json | null)?.domain === 'apple.com' && (i.session as Json).pages_visited === 3);
    expect(apple).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      identification_type: 'company',
      status: 'identified',
      identified_at: expect.stringMatching(/Z$/),
      individual: null,
      company: { name: 'Apple Inc.', domain: 'apple.com', industry: null, employee_count: null, location: 'US', linkedin_url: null },
      icp_scores: [],
      session: { pages_visited: 3, duration_seconds: 0, referrer: '' },
    });
  });

  it('filters by status, type and qualified, and pages', async () => {
    const get = async (query: Record<string, string>) =>
      ((await (await ids(a.key, { website_id: a.websiteId, ...query })).json()) as { identifications: Json[] }).identifications;
    expect((await get({ status: 'failed' })).map((i) => i.status)).toEqual(['failed']);
    expect(await get({ status: 'identified' })).toHaveLength(6);
    expect(await get({ type: 'individual' })).toHaveLength(0);
    expect(await get({ type: 'company' })).toHaveLength(6);
    expect(await get({ qualified: 'true' })).toHaveLength(0);
    expect(await get({ qualified: 'false' })).toHaveLength(7);
    const page1 = await get({ limit: '4' });
    const page2 = await get({ limit: '4', offset: '4' });
    expect(page1).toHaveLength(4);
    expect(page2).toHaveLength(3);
    expect(new Set([...page1, ...page2].map((i) => i.id)).size).toBe(7);
  });

  it('answers 404 for another account’s website, 400 for bad parameters, 401 without a key', async () => {
    expect((await ids(b.key, { website_id: a.websiteId })).status).toBe(404);
    expect((await ids(a.key, { website_id: 'nope' })).status).toBe(400);
    expect((await ids(a.key, {})).status).toBe(400);
    expect((await ids(a.key, { website_id: a.websiteId, limit: '501' })).status).toBe(400);
    expect((await ids(a.key, { website_id: a.websiteId, status: 'done' })).status).toBe(400);
    expect((await env.app.request(`http://localhost/identification-list?website_id=${a.websiteId}`)).status).toBe(401);
  });
});

/** A Postgres array literal of uuids, as a parameter. */
const uuids = (ids: string[]) => `{${ids.join(',')}}`;

describe('list-visitors without a search, across trackers', () => {
  /**
   * The request without a search is answered from the newest rows of each tracker and of the key's
   * lookups, merged (migration 0027), and its total counted apart. The oracle here is the listing's
   * definition written plainly: every row of the window, deduplicated, sorted, sliced.
   */
  it('pages and counts exactly as the whole window sorted would: ties on last_seen, an address on several trackers, lookups a tracker saw', async () => {
    const trackers = [await seedDirectKey(env.deps, partner.account_id), await seedDirectKey(env.deps, partner.account_id)];
    const websites = [own.websiteId, ...trackers.map((t) => t.website_id)];
    // 40 addresses per tracker from a pool of 30 (a quarter of them IPv6), so an address is on several
    // trackers; last_seen from 6 values over 45 days, so rows tie; every fifth visitor not identified
    // (never listed).
    await seedVisitors(
      env.db,
      await env.db<VisitorSeed>`
        select website_id, api_key_id, host(ip) as ip, last_seen - interval '1 hour' as first_seen, last_seen,
               case when g % 5 <> 0 then 'listed' || g || '.example' end as domain, case when g % 5 <> 0 then 'Listed ' || g end as company_name
        from (
          select distinct on (w.id, ip) w.id as website_id, w.api_key_id, ip, g, last_seen
          from unnest(${uuids(websites)}::uuid[]) with ordinality s (id, k)
          join websites w on w.id = s.id
          cross join generate_series(1, 40) g
          cross join lateral (select ((g * 7 + s.k * 13) % 30)::int as n) p
          -- Each IPv6 address in a /64 of its own: a /64 is one identification per website and period.
          cross join lateral (select case when n % 4 = 0 then ('2001:db8:0:' || n || '::')::inet else '10.9.0.0'::inet end + n as ip,
                                     date_trunc('second', now()) - make_interval(days => ((g * 3 + s.k) % 6)::int * 9) as last_seen) x
          order by w.id, ip, g
        ) src
        -- Stored out of address order, so rows that tie on last_seen are not in the page's order by chance.
        order by md5(host(ip))`,
    );
    // The master key's own lookups, half of them addresses the trackers saw, at tying times too; and
    // another key's lookups of the same addresses, which are not the master key's to list.
    for (const key of [partner.api_key_id, trackers[0]?.api_key_id ?? '']) {
      await env.db`
        insert into api_lookups (api_key_id, ip, first_seen, last_seen, lookup_count, domain, company_name, confidence, country, label_id)
        select ${key}, case when g % 2 = 0 then ('2001:db8:0:' || (g * 2) || '::')::inet else '10.9.0.0'::inet end + (g * 2), ls, ls, 1,
               'looked' || g || '.example', 'Looked ' || g, 0.7, 'US', sl_search_label('looked ' || g)
        from generate_series(0, 29) g,
             lateral (select date_trunc('second', now()) - make_interval(days => (g % 13) * 4) as ls) t`;
    }

    const domainOf = new Map<string, string>();
    for (const w of await env.db<{ id: string; domain: string }>`select id, domain from websites where id = any(${uuids(websites)}::uuid[])`) {
      domainOf.set(w.id, w.domain);
    }
    const expected = async (since: Date, source: string, site: string | null) => {
      const sites = websites.filter((w) => site === null || domainOf.get(w) === site);
      const rows = await env.db<{ ip: string; website_id: string | null; src: string }>`
        with t as (
          select website_id, ip, last_seen from visitors
          where ${source !== 'api'} and website_id = any(${uuids(sites)}::uuid[]) and identification_id is not null and last_seen >= ${since}
        ), m as (
          select website_id, ip, last_seen, 'tracker' as src from t
          union all
          select null, ip, last_seen, 'api' from api_lookups a
          where ${source !== 'tracker'} and api_key_id = ${partner.api_key_id} and last_seen >= ${since}
            and not exists (select 1 from t where t.ip = a.ip)
        )
        select host(m.ip) as ip, m.website_id, m.src from m order by m.last_seen desc, m.ip, m.website_id nulls last`;
      return rows.map((r) => `${r.src} ${r.ip} ${r.website_id ? domainOf.get(r.website_id) : null}`);
    };

    // A since equal to a run of tied last_seen values: those rows are in the window.
    const [edge] = await env.db<{ at: Date }>`
      select max(last_seen) as at from visitors where website_id = any(${uuids(websites)}::uuid[]) and last_seen < now() - interval '10 days'`;
    let compared = 0;
    for (const since of [10, 30, 60].map((days) => new Date(Date.now() - days * 86_400_000)).concat(edge?.at ?? new Date())) {
      for (const source of ['all', 'tracker', 'api']) {
        for (const site of [null, domainOf.get(websites[1] as string) as string, 'no-such-tracker.example']) {
          const all = await expected(since, source, site);
          for (const [limit, offset] of [
            [100, 0],
            [7, 0],
            [7, 14],
            [5, 61],
            [3, Math.max(0, all.length - 2)],
          ] as const) {
            const query: Record<string, string> = { since: since.toISOString(), source, limit: String(limit), offset: String(offset) };
            if (site) query.tracker_site = site;
            const res = await list(partner.key, query);
            expect(res.status, JSON.stringify(query)).toBe(200);
            const body = ListVisitorsResponse.parse(res.body);
            const got = body.visitors.map((r) => `${r.source} ${r.ip} ${r.tracker_site}`);
            expect({ total: body.total, count: body.count, rows: got }, JSON.stringify(query)).toEqual({
              total: all.length,
              count: got.length,
              rows: all.slice(offset, offset + limit),
            });
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(180);
    // The data has what the test is about: an address on more than one tracker, and ties.
    const [shape] = await env.db<{ shared: number; ties: number }>`
      select (select count(*)::int from (select ip from visitors where website_id = any(${uuids(websites)}::uuid[]) and identification_id is not null
                                          group by ip having count(*) > 1) x) as shared,
             (select count(*)::int from (select last_seen from visitors where website_id = any(${uuids(websites)}::uuid[])
                                          group by last_seen having count(*) > 1) y) as ties`;
    expect(shape?.shared).toBeGreaterThan(5);
    expect(shape?.ties).toBeGreaterThan(5);
  });
});
