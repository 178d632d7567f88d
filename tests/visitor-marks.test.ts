import { type CoreDeps, csvField, EXPORT_COLUMNS, exportVisitors, type KeyRecord, type Sql, type SqlValue } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { parseCsv } from './support/csv.ts';
import { seedDirectKey, seedPartner, uniqueDomain } from './support/seed.ts';
import { type AccountTrackers, listedTotal, seedAccountTrackers, seedVisitors, type VisitorSeed } from './support/visitors.ts';

/**
 * The site view's visitor actions: visitor-mark watches and pins a listed visitor; list-visitors
 * filters on the marks and on a window's top (`until`) with exact totals on every path (the marked
 * rows' indexes, the hourly counts less the marked, the search); visitors-export answers the same
 * rows as list-visitors, as CSV, read through a cursor a batch at a time.
 */
let env: TestEnv;
let key: AccountTrackers['key'];
let second: AccountTrackers['second'];
let accountKey: string;
let accountKeyId: string;
let domains: string[];
const ip = (g: number) => `10.30.0.${g}`;

const mark = (apiKey: string, body: Record<string, unknown>) => call(env, 'visitor-mark', { key: apiKey, body });

/** Every row of list-visitors for a filter, page after page. */
async function listAll(apiKey: string, query: Record<string, string>): Promise<Json[]> {
  const rows: Json[] = [];
  for (let offset = 0; ; offset += 37) {
    const res = await call(env, 'list-visitors', { key: apiKey, query: { ...query, limit: '37', offset: String(offset) } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const page = res.body.visitors as Json[];
    rows.push(...page);
    if (page.length < 37) return rows;
  }
}

/** The export's records (support/csv.ts), each ended by CRLF as RFC 4180 writes it, the last one too. */
function exportRecords(text: string): string[][] {
  const { records, unfinished } = parseCsv(text, { crlfOnly: true });
  expect(unfinished === null, 'the file ends with CRLF').toBe(true);
  return records;
}

/** A list-visitors row as the export writes it, each field as its CSV cell reads back. */
const asCells = (row: Json) =>
  EXPORT_COLUMNS.map((c) => {
    const cell = csvField(row[c]);
    return cell.startsWith('"') ? cell.slice(1, -1).replaceAll('""', '"') : cell;
  });

async function exportCsv(apiKey: string, query: Record<string, string>) {
  const res = await env.app.request(`${new URL(`http://localhost/functions/v1/visitors-export?${new URLSearchParams(query)}`)}`, {
    headers: { 'x-access-key': apiKey },
  });
  return { res, text: await res.text() };
}

beforeAll(async () => {
  env = await createTestEnv();
  ({ key, second, accountKey, accountKeyId, domains } = await seedAccountTrackers(env));
  // 90 addresses on the first tracker, 30 of them on the second, over 40 days; two of three
  // identified, with names a spreadsheet would run (=, +, -, @), commas, quotes and line breaks.
  await seedVisitors(
    env.db,
    await env.db<VisitorSeed>`
      select w.id as website_id, w.api_key_id, host('10.30.0.0'::inet + g) as ip, last_seen - interval '1 day' as first_seen, last_seen,
             case when g % 3 <> 0 then 'marked' || g || '.example' end as domain,
             case when g % 3 <> 0 then
               (array['=HYPERLINK("http://evil.example")', '+1 Co', '-Minus, Inc.', '@Handle "Quoted"', E'Two\r\nLines', 'Plain', 'Plain'])[1 + g % 7] || ' ' || g
             end as company_name
      from websites w cross join generate_series(1, 90) g,
           lateral (select date_trunc('hour', now()) - make_interval(hours => (g * 37) % 960) + make_interval(mins => g % 60) as last_seen) t
      where w.id = ${key.website_id} or (w.id = ${second.website_id} and g <= 30)`,
  );
  await env.db`
    insert into api_lookups (api_key_id, ip, first_seen, last_seen, lookup_count, domain, company_name, confidence, country, label_id)
    select k.id, '10.30.0.0'::inet + g, ls - interval '2 days', ls, 1, 'looked' || g || '.example', 'Looked ' || g, 0.7, 'US',
           sl_search_label('looked ' || g)
    from (values (${key.api_key_id}::uuid), (${accountKeyId}::uuid)) k (id), generate_series(1, 120) g,
         lateral (select date_trunc('hour', now()) - make_interval(hours => (g * 53) % 900, mins => g % 7) as ls) t
    where g % 4 = 0 or g > 90`;
});
afterAll(() => env.close());

describe('visitor-mark', () => {
  it('watches and pins a listed visitor, one mark at a time, and answers the marks after the change', async () => {
    const res = await mark(key.key, { tracker_site: domains[0], ip: ip(1), is_watched: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ success: true, tracker_site: domains[0], ip: ip(1), is_watched: true, is_pinned: false });
    const pinned = await mark(key.key, { tracker_site: (domains[0] ?? '').toUpperCase(), ip: ip(1), is_pinned: true });
    expect(pinned.body).toMatchObject({ is_watched: true, is_pinned: true });
    const unwatched = await mark(key.key, { tracker_site: domains[0], ip: ip(1), is_watched: false });
    expect(unwatched.body).toMatchObject({ is_watched: false, is_pinned: true });
    const listed = await call(env, 'list-visitors', { key: key.key, query: { search: ip(1), source: 'tracker', since: '2000-01-01' } });
    expect((listed.body.visitors as Json[]).find((v) => v.ip === ip(1))).toMatchObject({ is_watched: false, is_pinned: true });
  });

  it('is 404 for a visitor the key cannot list, and changes nothing', async () => {
    const before = await env.db<{ n: number }>`select count(*)::int as n from visitors where is_watched or is_pinned`;
    // The second tracker's visitor, through a key scoped to the first (another account's, as it sees it).
    const other = await mark(key.key, { tracker_site: domains[1], ip: ip(2), is_watched: true });
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ success: false, error: expect.stringMatching(/no such visitor/) });
    // An unidentified visitor (never listed), an address never seen, a tracker of no one.
    expect((await mark(key.key, { tracker_site: domains[0], ip: ip(3), is_watched: true })).status).toBe(404);
    expect((await mark(key.key, { tracker_site: domains[0], ip: '10.31.0.1', is_watched: true })).status).toBe(404);
    expect((await mark(key.key, { tracker_site: uniqueDomain('nobody'), ip: ip(2), is_watched: true })).status).toBe(404);
    // Another account's key.
    const stranger = await seedPartner(env.deps, { quota: 10 });
    expect((await mark(stranger.key, { tracker_site: domains[0], ip: ip(2), is_watched: true })).status).toBe(404);
    expect(await env.db<{ n: number }>`select count(*)::int as n from visitors where is_watched or is_pinned`).toEqual(before);
  });

  it('is 400 for a body it cannot read', async () => {
    for (const body of [
      { tracker_site: domains[0], ip: ip(2) },
      { tracker_site: domains[0], ip: 'not-an-address', is_watched: true },
      { tracker_site: 'not a domain', ip: ip(2), is_watched: true },
      { tracker_site: domains[0], ip: ip(2), is_watched: 'yes' },
      { tracker_site: domains[0], ip: ip(2), is_watched: true, crm_status: 'customer' },
    ]) {
      const res = await mark(key.key, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.success).toBe(false);
    }
  });

  it('lets the account’s key mark a visitor of any of its trackers', async () => {
    const res = await mark(accountKey, { tracker_site: domains[1], ip: ip(2), is_watched: true });
    expect(res.status).toBe(200);
  });
});

describe('list-visitors filters', () => {
  beforeAll(async () => {
    // Marks on both trackers, in several hours, some both watched and pinned.
    for (const g of [4, 5, 7, 8, 10, 11, 13, 14, 16, 17, 20, 22, 25, 26, 28, 29]) {
      const body = { tracker_site: domains[0], ip: ip(g), is_watched: g % 2 === 0, is_pinned: g % 5 < 3 };
      expect((await mark(key.key, body)).status).toBe(200);
    }
    for (const g of [4, 5, 10, 11]) expect((await mark(accountKey, { tracker_site: domains[1], ip: ip(g), is_pinned: true })).status).toBe(200);
  });

  it('answers exact totals for every mark filter, window top and source, on one tracker and several', async () => {
    const [now] = await env.db<{ t: Date }>`select date_trunc('hour', now()) as t`;
    const hour = now?.t.getTime() ?? 0;
    const windows: Array<{ since: Date; until?: Date }> = [
      { since: new Date(hour - 40 * 86_400_000) },
      { since: new Date(hour - 20 * 86_400_000 + 17 * 60_000), until: new Date(hour - 3 * 86_400_000 + 42 * 60_000) },
      { since: new Date(hour - 30 * 86_400_000), until: new Date(hour - 10 * 86_400_000) },
      // since and until in one hour; until in the hour after since's.
      { since: new Date(hour - 5 * 3_600_000 + 60_000), until: new Date(hour - 5 * 3_600_000 + 50 * 60_000) },
      { since: new Date(hour - 5 * 3_600_000 + 30 * 60_000), until: new Date(hour - 4 * 3_600_000 + 10 * 60_000) },
      { since: new Date(hour - 10 * 86_400_000), until: new Date(hour + 3_600_000) },
    ];
    const marks: Array<{ watched?: boolean; pinned?: boolean }> = [
      {},
      { watched: true },
      { watched: false },
      { pinned: true },
      { pinned: false },
      { watched: true, pinned: false },
      { watched: false, pinned: true },
      { watched: false, pinned: false },
      { watched: true, pinned: true },
    ];
    const cases = [
      { apiKey: key.key, apiKeyId: key.api_key_id, sites: [key.website_id] },
      { apiKey: accountKey, apiKeyId: accountKeyId, sites: [key.website_id, second.website_id] },
    ];
    const failures: string[] = [];
    for (const w of windows) {
      for (const m of marks) {
        for (const source of ['all', 'tracker', 'api'] as const) {
          for (const c of cases) {
            const query: Record<string, string> = { since: w.since.toISOString(), source, limit: '3' };
            if (w.until) query.until = w.until.toISOString();
            if (m.watched !== undefined) query.watched = String(m.watched);
            if (m.pinned !== undefined) query.pinned = String(m.pinned);
            const res = await call(env, 'list-visitors', { key: c.apiKey, query });
            expect(res.status, JSON.stringify(res.body)).toBe(200);
            const want = await listedTotal(env.db, { ...w, ...m, source, sites: c.sites, apiKeyId: c.apiKeyId });
            if (res.body.total !== want) failures.push(`${JSON.stringify(query)} ${c.sites.length} site(s): ${res.body.total} ≠ ${want}`);
            for (const row of res.body.visitors as Json[]) {
              const seen = String(row.last_seen);
              if (seen < w.since.toISOString() || (w.until && seen >= w.until.toISOString())) failures.push(`${JSON.stringify(query)}: ${seen}`);
              if (m.watched !== undefined && row.is_watched !== m.watched) failures.push(`${JSON.stringify(query)}: watched ${row.ip}`);
              if (m.pinned !== undefined && row.is_pinned !== m.pinned) failures.push(`${JSON.stringify(query)}: pinned ${row.ip}`);
            }
          }
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('filters the search’s rows the same way, the api row of a listed address staying hidden', async () => {
    const since = '2000-01-01';
    const watched = await listAll(accountKey, { since, search: '10.30.0.', watched: 'true' });
    expect(watched.length).toBeGreaterThan(0);
    expect(watched.every((r) => r.is_watched === true && r.source === 'tracker')).toBe(true);
    const all = await listAll(accountKey, { since, search: '10.30.0.' });
    const unwatched = await listAll(accountKey, { since, search: '10.30.0.', watched: 'false' });
    expect(watched.length + unwatched.length).toBe(all.length);
    // A lookup of a watched visitor's address is not listed as the unwatched api row.
    const watchedIps = new Set(watched.map((r) => r.ip));
    expect(unwatched.filter((r) => r.source === 'api' && watchedIps.has(r.ip))).toEqual([]);
  });

  it('refuses a window top it cannot read, or one not after since', async () => {
    const refused: Record<string, string>[] = [
      { until: 'yesterday' },
      { since: '2026-01-02', until: '2026-01-01' },
      { until: '0001-01-01' },
      { watched: 'yes' },
    ];
    for (const query of refused) {
      const res = await call(env, 'list-visitors', { key: key.key, query });
      expect(res.status, JSON.stringify(query)).toBe(400);
    }
  });
});

describe('visitors-export', () => {
  it('answers the rows list-visitors lists for the same filter, in its order, as CSV', async () => {
    const filters: Record<string, string>[] = [
      { since: '2000-01-01' },
      { since: '2000-01-01', watched: 'true' },
      { since: '2000-01-01', pinned: 'false', source: 'all' },
      { since: new Date(Date.now() - 20 * 86_400_000).toISOString(), until: new Date(Date.now() - 2 * 86_400_000).toISOString() },
      { since: '2000-01-01', search: 'plain' },
      { since: '2000-01-01', search: '10.30.0.1', watched: 'false' },
      { since: '2000-01-01', source: 'api' },
      { since: '2000-01-01', tracker_site: domains[1] ?? '' },
    ];
    for (const [apiKey, label] of [
      [key.key, 'own key'],
      [accountKey, 'account key'],
    ] as const) {
      for (const query of filters) {
        const { res, text } = await exportCsv(apiKey, query);
        expect(res.status, text).toBe(200);
        expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
        expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="visitors-[a-z0-9.-]+-\d{4}-\d{2}-\d{2}\.csv"$/);
        const [header, ...records] = exportRecords(text);
        expect(header).toEqual(EXPORT_COLUMNS);
        const listed = await listAll(apiKey, query);
        expect(records, `${label} ${JSON.stringify(query)}`).toEqual(listed.map(asCells));
      }
    }
  });

  it('writes text a spreadsheet would run as a formula inert, and quotes what needs it', async () => {
    const { text } = await exportCsv(key.key, { since: '2000-01-01', source: 'tracker' });
    const records = exportRecords(text);
    const names = records.map((r) => r[EXPORT_COLUMNS.indexOf('company_name')] ?? '');
    expect(names).toContain(`'=HYPERLINK("http://evil.example") 7`);
    expect(names).toContain(`'+1 Co 1`);
    expect(names).toContain(`'-Minus, Inc. 2`);
    expect(names).toContain(`'@Handle "Quoted" 10`);
    expect(names).toContain('Two\r\nLines 4');
    expect(names.filter((n) => /^[=+\-@]/.test(n))).toEqual([]);
    expect(text).toContain(`"'=HYPERLINK(""http://evil.example"") 7"`);
    expect(csvField(-3)).toBe('-3');
    expect(csvField(['a.example', 'b.example'])).toBe('a.example; b.example');
  });

  it('is 400 for a bad filter and 401 without a key, before any CSV', async () => {
    const bad = await exportCsv(key.key, { since: '2026-02-30' });
    expect(bad.res.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({ success: false });
    const none = await env.app.request('http://localhost/functions/v1/visitors-export');
    expect(none.status).toBe(401);
  });

  it('streams: the first rows are written while most are still in the database, a batch held at a time', async () => {
    // 24,000 identified visitors on a tracker of their own.
    const partner = await seedPartner(env.deps, { quota: 10 });
    const big = await seedDirectKey(env.deps, partner.account_id);
    await env.db`
      with ids as (
        insert into identifications (website_id, ip, api_key_id, period_start, status, created_at, identified_at, identification_type,
                                     traffic_type, reason, confidence, country, domain, company_name)
        select ${big.website_id}, '11.0.0.0'::inet + g, ${big.api_key_id}, date_trunc('month', now()), 'identified', now(), now(), 'company',
               'business', 'test', 0.8, 'US', 'many.example', 'Many ' || g
        from generate_series(1, 24000) g
        returning id, ip
      )
      insert into visitors (website_id, ip, api_key_id, first_seen, last_seen, visit_count, pages_viewed, identification_id, identified_count)
      select ${big.website_id}, ip, ${big.api_key_id}, now() - interval '1 day', now() - make_interval(secs => (ip - '11.0.0.0'::inet)), 1, 1, id, 1
      from ids`;
    // The database as the verb reads it, counting the rows its cursors have handed over.
    let fetched = 0;
    const db = env.deps.db;
    const counting: Sql = Object.assign((strings: TemplateStringsArray, ...values: SqlValue[]) => db(strings, ...values), {
      begin: db.begin.bind(db),
      cursor:
        <T extends object>(size: number) =>
        (strings: TemplateStringsArray, ...values: SqlValue[]): AsyncIterable<T[]> => ({
          async *[Symbol.asyncIterator]() {
            for await (const batch of db.cursor<T>(size)(strings, ...values)) {
              fetched += batch.length;
              yield batch;
            }
          },
        }),
    }) as Sql;
    const callerKey: KeyRecord = {
      apiKeyId: big.api_key_id,
      accountId: partner.account_id,
      status: 'active',
      isPartner: false,
      isPartnerMaster: false,
      parentApiKeyId: null,
      scope: 'websites',
    };
    const ctx: CoreDeps = { ...env.deps, db: counting };
    const { chunks } = await exportVisitors({ ctx, input: { source: 'tracker', since: '2000-01-01', key: callerKey } });
    const it = chunks[Symbol.asyncIterator]();
    expect((await it.next()).value).toBe(`${EXPORT_COLUMNS.join(',')}\r\n`);
    const first = await it.next();
    expect(first.done).toBe(false);
    // The first rows are out; the database has handed over one batch of the 24,000.
    expect(fetched).toBeGreaterThan(0);
    expect(fetched).toBeLessThanOrEqual(500);
    expect(String(first.value).split('\r\n')[0]).toContain('Many 1,');
    let lines = String(first.value).split('\r\n').length - 1;
    let most = fetched;
    for (let next = await it.next(); !next.done; next = await it.next()) {
      lines += next.value.split('\r\n').length - 1;
      // Never more than a batch ahead of what has been written.
      most = Math.max(most, fetched - lines);
    }
    expect(lines).toBe(24_000);
    expect(fetched).toBe(24_000);
    expect(most).toBeLessThanOrEqual(500);
  }, 120_000);

  it('closes the cursor when the reader leaves early', async () => {
    const { res } = await (async () => {
      const r = await env.app.request('http://localhost/functions/v1/visitors-export?since=2000-01-01', { headers: { 'x-access-key': accountKey } });
      return { res: r };
    })();
    const reader = res.body?.getReader();
    expect((await reader?.read())?.done).toBe(false);
    await reader?.cancel();
    // The database answers the next request: no transaction or connection was left holding it.
    const listed = await call(env, 'list-visitors', { key: accountKey, query: { limit: '1' } });
    expect(listed.status).toBe(200);
    if (env.db.kind === 'pglite') expect(await env.db`select name from pg_cursors where name like 'sl_cursor_%'`).toEqual([]);
  });
});
