import type { Sql } from '@sightline/core';
import type { TestEnv } from './app.ts';
import { seedDirectKey, seedPartner } from './seed.ts';

/**
 * One identified company visitor of a website, written as the tracker worker leaves it (an
 * identified identification, and the visitor row pointing at it), for suites about who may read
 * them; how visitors come to be identified is proved in visitor-identification.test.ts.
 */
export async function seedIdentifiedVisitor(
  db: Sql,
  site: { websiteId: string; apiKeyId: string },
  ip: string,
  company = `Company at ${ip}`,
): Promise<{ identification_id: string }> {
  const [row] = await db<{ id: string }>`
    insert into identifications (website_id, ip, api_key_id, period_start, status, identified_at, identification_type,
                                 traffic_type, reason, confidence, country, domain, company_name)
    values (${site.websiteId}, ${ip}::inet, ${site.apiKeyId}, date_trunc('month', now()), 'identified', now(), 'company',
            'business', 'seeded', 0.9, 'US', 'seeded.example.com', ${company})
    returning id`;
  if (!row) throw new Error('no identification inserted');
  await db`
    insert into visitors (website_id, ip, api_key_id, first_seen, last_seen, visit_count, pages_viewed, identification_id, identified_count)
    values (${site.websiteId}, ${ip}::inet, ${site.apiKeyId}, now() - interval '1 hour', now(), 1, 1, ${row.id}, 1)`;
  return { identification_id: row.id };
}

/** Two direct trackers of one partner account, each owned by its own key scoped to its websites, and the account's master key. */
export interface AccountTrackers {
  key: Awaited<ReturnType<typeof seedDirectKey>>;
  second: Awaited<ReturnType<typeof seedDirectKey>>;
  accountKey: string;
  accountKeyId: string;
  /** The two trackers' domains, `key`'s first. */
  domains: string[];
}

/** The listing suites' account: a key sees its own tracker's visitors, the account's key both trackers'. */
export async function seedAccountTrackers(env: Pick<TestEnv, 'deps' | 'db'>): Promise<AccountTrackers> {
  const partner = await seedPartner(env.deps, { quota: 1000 });
  const key = await seedDirectKey(env.deps, partner.account_id);
  const second = await seedDirectKey(env.deps, partner.account_id);
  await env.db`update api_keys set scope = 'websites' where id = any(${`{${key.api_key_id},${second.api_key_id}}`}::uuid[])`;
  const ws = await env.db<{ id: string; domain: string }>`
    select id, domain from websites where id = any(${`{${key.website_id},${second.website_id}}`}::uuid[])`;
  const domains = [key.website_id, second.website_id].map((id) => ws.find((w) => w.id === id)?.domain ?? '');
  return { key, second, accountKey: partner.key, accountKeyId: partner.api_key_id, domains };
}

/** A visitor to seed in bulk: identified as `company_name` at `domain`, or never identified when `company_name` is null. */
export interface VisitorSeed {
  website_id: string;
  api_key_id: string;
  ip: string;
  first_seen: Date;
  last_seen: Date;
  domain: string | null;
  company_name: string | null;
}

/**
 * Visitors in bulk as the tracker worker leaves them, in one statement: an identified one (identified
 * when last seen) points at its identification. Rows are stored in the order given, so a suite can
 * store them out of address order.
 */
export async function seedVisitors(db: Sql, rows: VisitorSeed[]): Promise<void> {
  await db`
    with src as (
      select (e.v->>'website_id')::uuid as website_id, (e.v->>'api_key_id')::uuid as api_key_id, (e.v->>'ip')::inet as ip,
             (e.v->>'first_seen')::timestamptz as first_seen, (e.v->>'last_seen')::timestamptz as last_seen,
             e.v->>'domain' as domain, e.v->>'company_name' as company_name, e.ord
      from json_array_elements(${JSON.stringify(rows)}::text::json) with ordinality e (v, ord)
    ), ids as (
      insert into identifications (website_id, ip, api_key_id, period_start, status, created_at, identified_at, identification_type,
                                   traffic_type, reason, confidence, country, domain, company_name)
      select website_id, ip, api_key_id, date_trunc('month', now()), 'identified', last_seen, last_seen, 'company',
             'business', 'test', 0.8, 'US', domain, company_name
      from src where company_name is not null
      order by ord
      returning id, website_id, ip
    )
    insert into visitors (website_id, ip, api_key_id, first_seen, last_seen, visit_count, pages_viewed, identification_id, identified_count)
    select s.website_id, s.ip, s.api_key_id, s.first_seen, s.last_seen, 1, 1, ids.id, case when ids.id is null then 0 else 1 end
    from src s left join ids on ids.website_id = s.website_id and ids.ip = s.ip
    order by s.ord`;
}

/** What list-visitors lists for a filter, counted straight from the tables: the reference for its `total` (a lookup of an address a listed tracker row has is not counted again). */
export async function listedTotal(
  db: Sql,
  q: {
    since: Date;
    until?: Date;
    source: 'all' | 'tracker' | 'api';
    sites: string[];
    apiKeyId: string;
    watched?: boolean;
    pinned?: boolean;
  },
): Promise<number> {
  const until = q.until ?? new Date('9999-01-01T00:00:00Z');
  const [row] = await db<{ n: number }>`
    with t as (
      select ip, is_watched, is_pinned from visitors
      where ${q.source !== 'api'} and website_id = any(${`{${q.sites.join(',')}}`}::uuid[]) and identification_id is not null
        and last_seen >= ${q.since} and last_seen < ${until}
    )
    select ((select count(*) from t
             where (${q.watched ?? null}::boolean is null or is_watched = ${q.watched ?? null}::boolean)
               and (${q.pinned ?? null}::boolean is null or is_pinned = ${q.pinned ?? null}::boolean))
          + (select count(*) from api_lookups a
             where ${q.source !== 'tracker'} and ${q.watched ?? false} is not true and ${q.pinned ?? false} is not true
               and a.api_key_id = ${q.apiKeyId} and a.last_seen >= ${q.since} and a.last_seen < ${until}
               and not exists (select 1 from t where t.ip = a.ip)))::int as n`;
  return row?.n ?? -1;
}
