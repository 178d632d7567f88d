import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { type AccountTrackers, listedTotal, seedAccountTrackers, seedVisitors, type VisitorSeed } from './support/visitors.ts';

/**
 * list-visitors' `total` without a search is summed from hourly counts that triggers on visitors
 * and api_lookups keep (migration 0034). Whatever changes the rows — a visitor seen again in another
 * hour, identified or no longer, deleted, its address replaced; a lookup recorded, seen again or
 * deleted — the total must stay the count of the window, for a `since` anywhere in an hour, on one
 * tracker or several, for every source.
 */
let env: TestEnv;
let key: AccountTrackers['key'];
let second: AccountTrackers['second'];
let accountKey: string;
let accountKeyId: string;
let domains: string[];

/** Windows that start at the hour, inside it and inside a minute, at its last microsecond, beside a pair, in the future; each source; one tracker and the account's two. */
async function checkTotals(step: string) {
  const [now] = await env.db<{ t: Date }>`select date_trunc('hour', now()) as t`;
  const hour = now?.t.getTime() ?? 0;
  const sinces = [
    new Date(hour - 30 * 86_400_000),
    new Date(hour - 3 * 3_600_000 + 17 * 60_000),
    new Date(hour - 3_600_000),
    new Date(hour - 1),
    new Date(hour + 42 * 60_000),
    new Date(hour - 5 * 86_400_000 + 59 * 60_000 + 59_999),
    new Date(hour + 3 * 3_600_000),
    // Inside a minute, and in an hour's last minute (the pairs of since's hour are counted by the minute).
    new Date(hour - 3 * 3_600_000 + 17 * 60_000 + 23_500),
    new Date(hour - 2 * 3_600_000 - 30_000),
  ];
  // Just before and just after the older row of the newest pairs: a pair in since's own minute, on either side of since.
  const pairs = await env.db<{ t: Date }>`
    select least(v.last_seen, a.last_seen) as t from visitors v join api_lookups a on a.api_key_id = ${key.api_key_id} and a.ip = v.ip
    where v.website_id = ${key.website_id} and v.identification_id is not null order by 1 desc limit 2`;
  for (const p of pairs) sinces.push(new Date(p.t.getTime() - 5_000), new Date(p.t.getTime() + 1));
  const cases: Array<{ apiKey: string; apiKeyId: string; site?: string; sites: string[] }> = [
    // The key's own tracker: the pairs' counts answer.
    { apiKey: key.key, apiKeyId: key.api_key_id, sites: [key.website_id] },
    // The account's key over both trackers, and over one it does not own: the lookups probed.
    { apiKey: accountKey, apiKeyId: accountKeyId, sites: [] },
  ];
  const failures: string[] = [];
  for (const since of sinces) {
    for (const source of ['all', 'tracker', 'api'] as const) {
      for (const c of cases) {
        const res = await call(env, 'list-visitors', { key: c.apiKey, query: { since: since.toISOString(), source, limit: '1' } });
        expect(res.status).toBe(200);
        const sites = c.sites.length ? c.sites : [key.website_id, second.website_id];
        const want = await listedTotal(env.db, { since, source, sites, apiKeyId: c.apiKeyId });
        if (res.body.total !== want)
          failures.push(`${step}: since ${since.toISOString()} ${source} ${sites.length} site(s): ${res.body.total} ≠ ${want}`);
      }
    }
    // One tracker by name, through the key that owns it and through one that does not.
    for (const [apiKey, domain] of [
      [key.key, domains[0]],
      [second.key, domains[1]],
    ] as const) {
      const res = await call(env, 'list-visitors', { key: apiKey, query: { since: since.toISOString(), tracker_site: domain ?? '' } });
      const site = domain === domains[0] ? key : second;
      const want = await listedTotal(env.db, { since, source: 'all', sites: [site.website_id], apiKeyId: site.api_key_id });
      if (res.body.total !== want) failures.push(`${step}: since ${since.toISOString()} tracker_site ${domain}: ${res.body.total} ≠ ${want}`);
    }
  }
  expect(failures).toEqual([]);
}

beforeAll(async () => {
  env = await createTestEnv();
  // Two direct trackers of one account, each owned by its own key.
  ({ key, second, accountKey, accountKeyId, domains } = await seedAccountTrackers(env));
  // 60 addresses on the first tracker and 20 of them on the second, seen over 40 days (several an
  // hour, some at the hour's first microsecond); two of three identified. The key's lookups: every
  // third address the tracker saw, at other times, and 20 addresses it did not.
  await seedVisitors(
    env.db,
    await env.db<VisitorSeed>`
      select w.id as website_id, w.api_key_id, host('10.20.0.0'::inet + g) as ip, last_seen - interval '1 day' as first_seen, last_seen,
             case when g % 3 <> 0 then 'counted' || g || '.example' end as domain, case when g % 3 <> 0 then 'Counted ' || g end as company_name
      from websites w cross join generate_series(1, 60) g,
           lateral (select date_trunc('hour', now()) - make_interval(hours => (g * 37) % 960)
                             + case when g % 4 = 0 then interval '0' else make_interval(mins => g % 60, secs => (g % 5) * 11.5) end as last_seen) t
      where w.id = ${key.website_id} or (w.id = ${second.website_id} and g <= 20)`,
  );
  await env.db`
    insert into api_lookups (api_key_id, ip, first_seen, last_seen, lookup_count, domain, company_name, confidence, country, label_id)
    select ${key.api_key_id}, '10.20.0.0'::inet + g, ls - interval '2 days', ls, 1, 'looked' || g || '.example', 'Looked ' || g, 0.7, 'US',
           sl_search_label('looked ' || g)
    from generate_series(1, 80) g,
         lateral (select date_trunc('hour', now()) - make_interval(hours => (g * 53) % 900, mins => g % 7, secs => (g % 3) * 17.25) as ls) t
    where g % 3 = 0 or g > 60`;
  // The account key's own lookups, of addresses on one tracker or both.
  await env.db`
    insert into api_lookups (api_key_id, ip, first_seen, last_seen, lookup_count, domain, company_name, confidence, country, label_id)
    select ${accountKeyId}, '10.20.0.0'::inet + g, ls, ls, 1, 'account' || g || '.example', 'Account ' || g, 0.7, 'US', sl_search_label('account ' || g)
    from generate_series(2, 70, 4) g, lateral (select date_trunc('hour', now()) - make_interval(hours => (g * 29) % 800) as ls) t`;
});
afterAll(() => env.close());

describe('list-visitors total from the hourly counts', () => {
  it('equals the count of the window after each kind of change to visitors and lookups', async () => {
    await checkTotals('seeded');

    // Visitors seen again: into this hour, into since's hour, identified ones and not.
    await env.db`update visitors set last_seen = now() where website_id = ${key.website_id} and (ip - '10.20.0.0'::inet) % 5 = 0`;
    await env.db`update visitors set last_seen = greatest(last_seen, date_trunc('hour', now()) - interval '150 minutes')
                 where (ip - '10.20.0.0'::inet) % 7 = 1`;
    await checkTotals('visitors seen again');

    // Identified later (as the settle does) and no longer (as a dropped identification leaves it).
    await env.db`
      update visitors v set identification_id = i.id, identified_count = 1
      from identifications i where i.website_id = v.website_id and v.identification_id is null and (v.ip - '10.20.0.0'::inet) % 2 = 0
        and i.id = (select id from identifications where website_id = v.website_id limit 1)`;
    await env.db`update visitors set identification_id = null where (ip - '10.20.0.0'::inet) % 11 = 2`;
    await checkTotals('identified and dropped');

    // Lookups recorded as ip-to-company records them: seen again now, and new ones of tracked addresses.
    await env.db`select sl_record_api_lookups(${JSON.stringify(
      [3, 6, 9, 61, 62, 4, 8, 14].map((g) => ({
        api_key_id: key.api_key_id,
        ip: `10.20.0.${g}`,
        domain: 'recorded.example',
        company_name: 'Recorded',
        confidence: 0.6,
        country: 'US',
        lookups: 1,
      })),
    )}::text::jsonb)`;
    await checkTotals('lookups recorded');

    // Rows removed, and an address replaced (as ageing personal data replaces it).
    await env.db`delete from visitors where website_id = ${key.website_id} and (ip - '10.20.0.0'::inet) % 13 = 4`;
    await env.db`delete from api_lookups where api_key_id = ${key.api_key_id} and (ip - '10.20.0.0'::inet) % 9 = 0`;
    await env.db`update visitors set ip = '10.99.0.0'::inet + (ip - '10.20.0.0'::inet) where (ip - '10.20.0.0'::inet) % 8 = 3`;
    await env.db`update api_lookups set ip = '10.99.0.0'::inet + (ip - '10.20.0.0'::inet) where (ip - '10.20.0.0'::inet) % 16 = 11`;
    await checkTotals('deleted and re-addressed');
  });

  it('keeps few rows an hour: a hundred statements seen in this hour leave it folded', async () => {
    for (let i = 0; i < 100; i++) {
      await env.db`update visitors set last_seen = clock_timestamp() where website_id = ${key.website_id} and ip = ${`10.20.0.${1 + (i % 50)}`}::inet`;
    }
    const [rows] = await env.db<{ n: number }>`
      select count(*)::int as n from visitor_listing_counts
      where scope_id = ${key.website_id} and kind = 'visitors' and hour = date_trunc('hour', now(), 'UTC')`;
    // Unfolded, each statement would have left a row of its own here.
    expect(rows?.n).toBeLessThanOrEqual(2);
    await checkTotals('after a hundred statements');
  });

  it.skipIf(!usingPostgres)('stays exact when a visitor and a lookup of its address change at once in two transactions', async () => {
    // A visitor statement that has run but not committed, while the lookups of its addresses are
    // recorded from another connection; then the other way round. The addresses: identified visitors
    // whose lookups and visits are both older than the last hour, so the pair moves into it.
    for (const [visitorsFirst, ips] of [
      [true, ['10.20.0.12', '10.20.0.42']],
      [false, ['10.20.0.48']],
    ] as const) {
      const visitors = env.db.begin(async (tx) => {
        if (!visitorsFirst) await new Promise((r) => setTimeout(r, 150));
        await tx`update visitors set last_seen = clock_timestamp() where website_id = ${key.website_id} and host(ip) = any(${`{${ips.join(',')}}`}::text[])`;
        await new Promise((r) => setTimeout(r, 300));
      });
      const lookups = env.db.begin(async (tx) => {
        if (visitorsFirst) await new Promise((r) => setTimeout(r, 150));
        await tx`select sl_record_api_lookups(${JSON.stringify(
          ips.map((ip) => ({
            api_key_id: key.api_key_id,
            ip,
            domain: 'raced.example',
            company_name: 'Raced',
            confidence: 0.6,
            country: 'US',
            lookups: 1,
          })),
        )}::text::jsonb)`;
        await new Promise((r) => setTimeout(r, 300));
      });
      await Promise.all([visitors, lookups]);
      // Older rows of those addresses moved into the last hour on both sides.
      await checkTotals(visitorsFirst ? 'visitors first' : 'lookups first');
    }
  });
});
