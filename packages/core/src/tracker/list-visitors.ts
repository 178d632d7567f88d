import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { badRequest } from '../kernel/errors.ts';
import { PageLimit, PageOffset, QueryInstant, Timestamp, whenGiven } from '../kernel/schemas.ts';
import { normaliseTrackerDomain } from './normalise-tracker-domain.ts';

const DEFAULT_WINDOW_DAYS = 30;

export const ListVisitorsInput = z.object({
  tracker_site: z
    .string()
    .max(253)
    .optional()
    .openapi({ description: 'One registered tracker domain; omitted means every tracker the key can access' }),
  since: QueryInstant.optional().openapi({ description: 'Earliest last_seen included; default the last 30 days' }),
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

/**
 * list-visitors: the identified visitors of the trackers the key can access (its account's — a
 * child's own, or a partner's own direct trackers for its master key; only its own for a key scoped
 * to its websites, such as a released child's, which sl_list_visitors reads from the key's row) and, for `source` all/api,
 * the key's own identified ip-to-company / ip-to-best-fit lookups. An address the trackers saw is
 * listed once as a tracker row, not again as an api row. Newest last_seen first; `total` counts
 * the whole filtered set. A suspended key still reads its data.
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
  const site = input.tracker_site === undefined ? null : normaliseTrackerDomain(input.tracker_site, 'tracker_site');
  const since = input.since ? new Date(input.since) : new Date(Date.now() - DEFAULT_WINDOW_DAYS * 86_400_000);
  if (since.getUTCFullYear() < 1970 || since.getUTCFullYear() > 9999) throw badRequest('since must be between 1970 and 9999');
  const term = input.search?.trim() ?? '';
  const pattern = term ? `%${escapeLike(term)}%` : null;
  // An address-like term as the range of address texts that begin with it: [term, term with its last
  // character raised by one). The characters an address can hold never end the alphabet, so raising
  // the last one is always another character.
  const addressFrom = ADDRESS_START.test(term) ? term.toLowerCase() : null;
  const addressTo = addressFrom && addressFrom.slice(0, -1) + String.fromCharCode(addressFrom.charCodeAt(addressFrom.length - 1) + 1);
  const trackers = input.source !== 'api';
  const api = input.source !== 'tracker';
  // A key sees its own lookups at once; another process's arrive within its flush (about a second).
  if (api) await ctx.apiLookups.flush();
  const [page] = await ctx.db<{ total: number; count: number; visitors: string }>`
    select total, count, visitors
    from sl_list_visitors(${input.key.accountId}, ${input.key.apiKeyId}, ${site}, ${since}, ${pattern}, ${addressFrom}, ${addressTo},
                          ${trackers}, ${api}, ${input.limit}, ${input.offset})`;
  return {
    count: page?.count ?? 0,
    total: page?.total ?? 0,
    limit: input.limit,
    offset: input.offset,
    source: input.source,
    visitorsJson: page?.visitors ?? '[]',
  };
}
