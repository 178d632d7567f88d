import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { badRequest } from '../kernel/errors.ts';
import { PageLimit, PageOffset, QueryBoolean, QueryInstant, Timestamp, whenGiven } from '../kernel/schemas.ts';
import { normaliseTrackerDomain } from './normalise-tracker-domain.ts';

const DEFAULT_WINDOW_DAYS = 30;

/** What list-visitors and visitors-export filter on: the same rows, paged or streamed whole. */
export const VisitorsFilter = z.object({
  tracker_site: z
    .string()
    .max(253)
    .optional()
    .openapi({ description: 'One registered tracker domain; omitted means every tracker the key can access' }),
  since: QueryInstant.optional().openapi({ description: 'Earliest last_seen included; default the last 30 days' }),
  until: QueryInstant.optional().openapi({ description: 'The top of the range: last_seen before it (exclusive); default none' }),
  source: z.enum(['all', 'tracker', 'api'], whenGiven('must be all, tracker or api')).default('all'),
  search: z.string().max(200, 'must be at most 200 characters').optional().openapi({
    description: 'Case-insensitive: a display name, company or domain containing the term, or an address beginning with it',
  }),
  watched: QueryBoolean.optional().openapi({
    type: 'string',
    enum: ['true', 'false'],
    description: 'Only watched visitors (true) or only the others (false); api rows are never watched',
  }),
  pinned: QueryBoolean.optional().openapi({
    type: 'string',
    enum: ['true', 'false'],
    description: 'Only pinned visitors (true) or only the others (false); api rows are never pinned. Pinned rows are not sorted first',
  }),
});
export type VisitorsFilter = z.infer<typeof VisitorsFilter>;

export const ListVisitorsInput = VisitorsFilter.extend({
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
      .enum(['pushed', 'failed'])
      .nullable()
      .openapi({ description: 'What the CRM push (an integration) did with the company: null until pushed' }),
    crm_id: z.string().nullable().openapi({ description: 'The CRM’s id of the company the push found or made (crm_status pushed)' }),
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

/**
 * A page of list-visitors with its rows as JSON text, written by Postgres (sl_list_visitors) in
 * VisitorRow's shape. Answered as it is: parsing a hundred rows into objects only to write them
 * out again was a third of the server's work per listing (npm run bench -- visitors).
 */
export interface VisitorsPageText extends Omit<VisitorsPage, 'visitors'> {
  /** A JSON array of VisitorRow. */
  visitorsJson: string;
}

/** The success body of list-visitors, `{success: true, ...VisitorsPage}`, with the rows spliced in unparsed. */
export function visitorsPageBody(page: VisitorsPageText): string {
  const { visitorsJson, ...rest } = page;
  return `${JSON.stringify({ success: true, ...rest }).slice(0, -1)},"visitors":${visitorsJson}}`;
}

const escapeLike = (term: string) => term.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
/** Text that can begin an address as Postgres writes it (IPv4 dotted, IPv6 hex and colons). */
const ADDRESS_START = /^[0-9a-f.:]+$/i;

/** A filter as sl_list_visitors and sl_export_visitors take it; 400 for a range off the calendar they can read. */
export interface ListingFilter {
  site: string | null;
  since: Date;
  until: Date | null;
  /** A LIKE pattern (lower case) for the labels containing the search term. */
  pattern: string | null;
  /** An address-like term as the range of address texts that begin with it. */
  addressFrom: string | null;
  addressTo: string | null;
  trackers: boolean;
  api: boolean;
  watched: boolean | null;
  pinned: boolean | null;
}

export function listingFilter(input: VisitorsFilter): ListingFilter {
  const site = input.tracker_site === undefined ? null : normaliseTrackerDomain(input.tracker_site, 'tracker_site');
  const since = input.since ? new Date(input.since) : new Date(Date.now() - DEFAULT_WINDOW_DAYS * 86_400_000);
  if (since.getUTCFullYear() < 1970 || since.getUTCFullYear() > 9999) throw badRequest('since must be between 1970 and 9999');
  const until = input.until ? new Date(input.until) : null;
  if (until && (until.getUTCFullYear() < 1970 || until.getUTCFullYear() > 9999)) throw badRequest('until must be between 1970 and 9999');
  if (until && until <= since) throw badRequest('until must be after since (by default 30 days ago)');
  const term = input.search?.trim() ?? '';
  // An address-like term as the range of address texts that begin with it: [term, term with its last
  // character raised by one). The characters an address can hold never end the alphabet, so raising
  // the last one is always another character.
  const addressFrom = ADDRESS_START.test(term) ? term.toLowerCase() : null;
  return {
    site,
    since,
    until,
    pattern: term ? `%${escapeLike(term)}%` : null,
    addressFrom,
    addressTo: addressFrom && addressFrom.slice(0, -1) + String.fromCharCode(addressFrom.charCodeAt(addressFrom.length - 1) + 1),
    trackers: input.source !== 'api',
    api: input.source !== 'tracker',
    watched: input.watched ?? null,
    pinned: input.pinned ?? null,
  };
}

/**
 * list-visitors: the identified visitors of the trackers the key can access (its account's — a
 * child's own, or a partner's own direct trackers for its master key; only its own for a key scoped
 * to its websites, such as a released child's, which sl_list_visitors reads from the key's row) and, for `source` all/api,
 * the key's own identified ip-to-company / ip-to-best-fit lookups. An address the trackers saw is
 * listed once as a tracker row, not again as an api row. Newest last_seen first; `total` counts
 * the whole filtered set. A suspended key still reads its data. `until` bounds the window at the
 * top (exclusive); `watched` / `pinned` keep the visitors with (true) or without (false) the mark
 * visitor-mark sets, applied after the deduplication (an api row has no marks).
 *
 * `search` matches a row whose label (display name, company, domain) contains the term, or whose
 * address starts with it. Names go through the label dictionary (migration 0011): the labels that
 * contain the term are found by their trigram index, then the rows that carry them by a btree, so
 * a search costs what it finds, not what the table holds. Without a search the page is taken from
 * the newest rows of each tracker and of the key's lookups (migration 0027), and the exact total is
 * summed from hourly counts that triggers keep as the rows change, plus the rows of since's own hour
 * (migration 0034), so the default view and an incremental sync cost the same at any size. The
 * query is one SQL function, sl_list_visitors (migrations 0013, 0027, 0028 and 0034), which also
 * writes the rows as JSON.
 */
export async function listVisitors({ ctx, input }: VerbArgs<ListVisitorsInput & { key: KeyRecord }>): Promise<VisitorsPageText> {
  const f = listingFilter(input);
  // A key sees its own lookups at once; another process's arrive within its flush (about a second).
  if (f.api) await ctx.apiLookups.flush();
  const [page] = await ctx.db<{ total: number; count: number; visitors: string }>`
    select total, count, visitors
    from sl_list_visitors(${input.key.accountId}, ${input.key.apiKeyId}, ${f.site}, ${f.since}, ${f.pattern}, ${f.addressFrom},
                          ${f.addressTo}, ${f.trackers}, ${f.api}, ${input.limit}, ${input.offset}, ${f.until}, ${f.watched}, ${f.pinned})`;
  return {
    count: page?.count ?? 0,
    total: page?.total ?? 0,
    limit: input.limit,
    offset: input.offset,
    source: input.source,
    visitorsJson: page?.visitors ?? '[]',
  };
}
