import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../context.ts';
import { badRequest } from '../errors.ts';
import { PageLimit, PageOffset, Timestamp, whenGiven } from '../schemas.ts';
import { normaliseTrackerDomain } from '../tracker-domain.ts';

const DEFAULT_WINDOW_DAYS = 30;

/** An ISO 8601 date or date-time (`2026-11-01`, `2026-11-01T09:30:00Z`, with an offset or not). */
const IsoInstant = z
  .string(whenGiven('must be an ISO 8601 date or date-time'))
  .max(40, 'must be an ISO 8601 date or date-time')
  .regex(/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$/, 'must be an ISO 8601 date or date-time')
  .refine((v) => !Number.isNaN(Date.parse(v)), 'must be an ISO 8601 date or date-time');

export const ListVisitorsInput = z.object({
  tracker_site: z
    .string()
    .max(253)
    .optional()
    .openapi({ description: 'One registered tracker domain; omitted means every tracker the key can access' }),
  since: IsoInstant.optional().openapi({ description: 'Earliest last_seen included; default the last 30 days' }),
  source: z.enum(['all', 'tracker', 'api'], whenGiven('must be all, tracker or api')).default('all'),
  search: z.string().max(200, 'must be at most 200 characters').optional().openapi({
    description: 'Case-insensitive: a display name, company or domain containing the term, or an address beginning with it',
  }),
  limit: PageLimit.default(100),
  offset: PageOffset.default(0),
});
export type ListVisitorsInput = z.infer<typeof ListVisitorsInput>;

const text = (description: string) => z.string().nullable().openapi({ description });

export const VisitorRow = z
  .object({
    ip: z.string(),
    source: z.enum(['tracker', 'api']),
    identification_type: z.enum(['company', 'individual']),
    display_name: z.string().openapi({ description: 'The person for an individual, else the company' }),
    person_linkedin_url: text('Individual rows only'),
    person_linkedin_name: text('Individual rows only'),
    person_linkedin_title: text('Individual rows only'),
    person_linkedin_company: text('Individual rows only'),
    domain: z.string(),
    company_name: z.string(),
    company_linkedin_url: text('Null when the data has none'),
    confidence: z.number().min(0).max(1),
    last_seen: Timestamp,
    first_seen: Timestamp,
    visit_count: z.number().int(),
    pages_viewed: z.number().int(),
    active_seconds: z.number().int(),
    tracker_site: text('The tracker’s registered domain; null on api rows'),
    country: text('ISO 3166 alpha-2; null when unknown'),
    industry: text('Null when the data has none'),
    employees: z.number().int().nullable().openapi({ description: 'Null when the data has none' }),
    high_intent: z.boolean().openapi({ description: 'At least 3 pages, or 60 engaged seconds, or a pricing/plans/demo/contact-sales page' }),
    raw_id: z.string().openapi({ description: 'The row’s own id: the identification (tracker) or the recorded lookup (api)' }),
    lookup_count: z.number().int().openapi({
      description: 'Tracker rows: identifications of the address on this site (one per billing period); api rows: lookups of it by the key',
    }),
    sites_visited: z.array(z.string()).openapi({ description: 'The key’s tracker domains this address has visited' }),
    is_watched: z.boolean(),
    is_pinned: z.boolean(),
    crm_status: z
      .enum(['new', 'contacted', 'qualified', 'customer', 'disqualified'])
      .nullable()
      .openapi({ description: 'Dashboard state; null until set' }),
  })
  .openapi('VisitorRow');
export type VisitorRow = z.infer<typeof VisitorRow>;

export const VisitorsPage = z.object({
  count: z.number().int().openapi({ description: 'Rows in this page' }),
  total: z.number().int().openapi({ description: 'The full deduplicated set matching the filters' }),
  limit: z.number().int(),
  offset: z.number().int(),
  source: z.enum(['all', 'tracker', 'api']),
  visitors: z.array(VisitorRow),
});
export type VisitorsPage = z.infer<typeof VisitorsPage>;

const escapeLike = (term: string) => term.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
/** Text that can begin an address as Postgres writes it (IPv4 dotted, IPv6 hex and colons). */
const ADDRESS_START = /^[0-9a-f.:]+$/i;

/**
 * list-visitors: the identified visitors of the trackers the key can access (its account's — a
 * child's own, or a partner's own direct trackers for its master key) and, for `source` all/api,
 * the key's own identified ip-to-company / ip-to-best-fit lookups. An address the trackers saw is
 * listed once as a tracker row, not again as an api row. Newest last_seen first; `total` counts
 * the whole filtered set. A suspended key still reads its data.
 *
 * `search` matches a row whose label (display name, company, domain) contains the term, or whose
 * address starts with it. Names go through the label dictionary (migration 0011): the labels that
 * contain the term are found by their trigram index, then the rows that carry them by a btree, so
 * a search costs what it finds, not what the table holds.
 */
export async function listVisitors({ ctx, input }: VerbArgs<ListVisitorsInput & { key: KeyRecord }>): Promise<VisitorsPage> {
  const site = input.tracker_site === undefined ? null : normaliseTrackerDomain(input.tracker_site, 'tracker_site');
  const since = input.since ? new Date(input.since) : new Date(Date.now() - DEFAULT_WINDOW_DAYS * 86_400_000);
  if (since.getUTCFullYear() < 1970 || since.getUTCFullYear() > 9999) throw badRequest('since must be between 1970 and 9999');
  const term = input.search?.trim() ?? '';
  const pattern = term ? `%${escapeLike(term)}%` : null;
  const addressPrefix = ADDRESS_START.test(term) ? `${escapeLike(term)}%` : null;
  const trackers = input.source !== 'api';
  const api = input.source !== 'tracker';
  // Planned for these values every time: the branches a request does not use (no search, no
  // address-like term, one source) are then folded away, and the label lookup is planned for its
  // term. Left to itself, Postgres switches a prepared statement to a generic plan after five
  // runs, which for this one took 3 s instead of 6 ms at 1M visitors (npm run bench -- visitors).
  const rows = await ctx.db.begin(async (tx) => {
    await tx`set local plan_cache_mode = force_custom_plan`;
    // A listing that counts a large window crosses JIT's cost threshold, and compiling cost more
    // than it saved (~60 ms of a listing's ~0.8 s at 1M visitors).
    await tx`set local jit = off`;
    return tx<VisitorRow & { total: number }>`
    with sites as (
      select w.id, w.domain from websites w join api_keys k on k.id = w.api_key_id
      where k.account_id = ${input.key.accountId} and (${site}::text is null or w.domain = ${site})
    ), labels as (
      select id from search_labels where ${pattern}::text is not null and label like ${pattern}
    ), tracked as not materialized (
      -- Three branches, at most two of them live: everything (no search), or the label matches plus
      -- the address matches that are not label matches already.
      select v.website_id, v.ip, v.last_seen, v.identification_id as row_id
      from visitors v
      where ${trackers} and ${pattern}::text is null
        and v.website_id in (select id from sites) and v.identification_id is not null and v.last_seen >= ${since}
      union all
      select v.website_id, v.ip, v.last_seen, v.identification_id
      from visitors v
      where ${trackers} and v.label_id in (select id from labels)
        and v.website_id in (select id from sites) and v.identification_id is not null and v.last_seen >= ${since}
      union all
      select v.website_id, v.ip, v.last_seen, v.identification_id
      from visitors v
      where ${trackers} and host(v.ip) like ${addressPrefix}
        and v.website_id in (select id from sites) and v.identification_id is not null and v.last_seen >= ${since}
        and (v.label_id is null or v.label_id not in (select id from labels))
    ), looked_up as (
      -- The same three branches over the key's own lookups, less the addresses listed as tracker rows.
      select a.ip, a.last_seen, a.id as row_id, a.label_id
      from api_lookups a
      where ${api} and ${pattern}::text is null and a.api_key_id = ${input.key.apiKeyId} and a.last_seen >= ${since}
      union all
      select a.ip, a.last_seen, a.id, a.label_id
      from api_lookups a
      where ${api} and a.label_id in (select id from labels) and a.api_key_id = ${input.key.apiKeyId} and a.last_seen >= ${since}
      union all
      select a.ip, a.last_seen, a.id, a.label_id
      from api_lookups a
      where ${api} and host(a.ip) like ${addressPrefix} and a.api_key_id = ${input.key.apiKeyId} and a.last_seen >= ${since}
        and a.label_id not in (select id from labels)
    ), matching as (
      select website_id, ip, last_seen, 'tracker'::text as source, row_id from tracked
      union all
      select null::uuid, l.ip, l.last_seen, 'api'::text, l.row_id from looked_up l
      where not exists (select 1 from tracked t where t.ip = l.ip)
    ), page as (
      select m.* from matching m
      order by m.last_seen desc, m.ip, m.website_id nulls last
      limit ${input.limit} offset ${input.offset}
    ), counted as (
      select count(*)::int as total from matching
    )
    -- One row even for a page past the end, carrying the total.
    select
      host(p.ip) as ip, p.source,
      coalesce(i.identification_type, 'company') as identification_type,
      coalesce(i.person_linkedin_name, i.company_name, a.company_name) as display_name,
      i.person_linkedin_url, i.person_linkedin_name, i.person_linkedin_title, i.person_linkedin_company,
      coalesce(i.domain, a.domain) as domain, coalesce(i.company_name, a.company_name) as company_name,
      i.company_linkedin_url, coalesce(i.confidence, a.confidence)::float8 as confidence,
      sl_iso(p.last_seen) as last_seen, sl_iso(coalesce(v.first_seen, a.first_seen)) as first_seen,
      coalesce(v.visit_count, 0) as visit_count, coalesce(v.pages_viewed, 0) as pages_viewed,
      coalesce(v.active_ms / 1000, 0)::int as active_seconds,
      s.domain as tracker_site, nullif(coalesce(i.country, a.country), '') as country, i.industry, i.employees,
      coalesce(v.high_intent, false) as high_intent,
      p.row_id::text as raw_id,
      case when p.source = 'api' then a.lookup_count
           else (select count(*)::int from identifications x
                 where x.website_id = p.website_id and x.ip = p.ip and x.status = 'identified') end as lookup_count,
      array(select distinct w.domain from visitors o join sites w on w.id = o.website_id where o.ip = p.ip order by w.domain)
        as sites_visited,
      coalesce(v.is_watched, false) as is_watched, coalesce(v.is_pinned, false) as is_pinned, v.crm_status,
      c.total
    from counted c
    left join page p on true
    left join visitors v on p.source = 'tracker' and v.website_id = p.website_id and v.ip = p.ip
    left join identifications i on p.source = 'tracker' and i.id = p.row_id
    left join api_lookups a on p.source = 'api' and a.id = p.row_id
    left join sites s on s.id = p.website_id
    order by p.last_seen desc, p.ip, p.website_id nulls last`;
  });
  const total = rows[0]?.total ?? 0;
  const visitors: VisitorRow[] = [];
  for (const row of rows) {
    if (row.ip === null) continue;
    // In place: copying each row without `total` was a fifth of the listing's CPU.
    delete (row as Partial<typeof row>).total;
    visitors.push(row);
  }
  return {
    count: visitors.length,
    total,
    limit: input.limit,
    offset: input.offset,
    source: input.source,
    visitors,
  };
}
