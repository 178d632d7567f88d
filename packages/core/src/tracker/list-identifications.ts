import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';
import { PageLimit, PageOffset, QueryBoolean, Timestamp, Uuid, whenGiven } from '../kernel/schemas.ts';

export const ListIdentificationsInput = z.object({
  website_id: Uuid.openapi({ description: 'A website of the key’s account' }),
  status: z.enum(['pending', 'identified', 'failed', 'excluded'], whenGiven('must be pending, identified, failed or excluded')).optional(),
  type: z.enum(['individual', 'company'], whenGiven('must be individual or company')).optional(),
  qualified: QueryBoolean.optional().openapi({
    type: 'boolean',
    description: 'Filter by ICP qualification: true lists identifications an active ICP of the account qualifies, false the rest',
  }),
  limit: PageLimit.default(100),
  offset: PageOffset.default(0),
});
export type ListIdentificationsInput = z.infer<typeof ListIdentificationsInput>;

export const Identification = z
  .object({
    id: z.string(),
    identification_type: z
      .enum(['individual', 'company'])
      .nullable()
      .openapi({ description: 'Null until identified (pending, or failed: no business behind the address)' }),
    status: z.enum(['pending', 'identified', 'failed', 'excluded']).openapi({
      description: 'pending → identified | failed | excluded (a traffic rule of the website excluded its country or company: no ID used)',
    }),
    identified_at: Timestamp.nullable().openapi({ description: 'When it was settled (identified or failed); null while pending' }),
    individual: z
      .object({ linkedin_url: z.string(), linkedin_name: z.string(), linkedin_title: z.string().nullable(), linkedin_company: z.string().nullable() })
      .nullable()
      .openapi({ description: 'Present for the individual type (US visitors only)' }),
    company: z
      .object({
        name: z.string(),
        domain: z.string(),
        industry: z.string().nullable(),
        employee_count: z.string().nullable().openapi({ description: 'A range, e.g. `51-200`' }),
        location: z.string().nullable(),
        linkedin_url: z.string().nullable(),
      })
      .nullable()
      .openapi({ description: 'Present once identified (an individual’s company too)' }),
    icp_scores: z.array(
      z.object({ icp_id: z.string(), icp_name: z.string(), score: z.number().min(0).max(100), qualified: z.boolean(), ai_summary: z.string() }),
    ),
    session: z.object({
      pages_visited: z.number().int(),
      duration_seconds: z.number().int().openapi({ description: 'Engaged seconds' }),
      referrer: z.string().openapi({ description: 'The first referrer from outside the site; empty when none' }),
    }),
  })
  .openapi('Identification');
export type Identification = z.infer<typeof Identification>;

/**
 * identification-list: the identifications of one website of the key's account, newest first.
 * A website of another account is a 404, as one that does not exist; so is, for a key scoped to its
 * own websites (a released child's), a website of the account it does not own, and such a key sees
 * no ICP scores (the ICPs are the account's, not the key holder's). `icp_scores` are the scores
 * against the account's active ICPs, highest first (icp/score-identifications.ts writes them); a
 * paused ICP's scores are hidden until it is active again. `qualified=true` lists what any active ICP
 * qualifies, `false` the rest.
 *
 * The page comes back as JSON text written by Postgres in Identification's shape (keys in its
 * order), answered as it is: as list-visitors, parsing a hundred rows only to write them again was
 * most of the server's work per page.
 */
export async function listIdentifications({
  ctx,
  input,
}: VerbArgs<ListIdentificationsInput & { key: KeyRecord }>): Promise<{ identificationsJson: string }> {
  // One statement (sl_list_identifications): the website's check, the page and its JSON.
  const [page] = await ctx.db<{ page_json: string }>`
    select page_json from sl_list_identifications(${input.key.apiKeyId}, ${input.key.accountId}, ${input.website_id},
      ${input.qualified ?? null}, ${input.status ?? null}, ${input.type ?? null}, ${input.limit}, ${input.offset})`;
  if (!page) throw notFound('no such website for this key');
  return { identificationsJson: page.page_json };
}

/** The success body of identification-list, `{success: true, identifications}`, with the rows spliced in unparsed. */
export function identificationsPageBody({ identificationsJson }: { identificationsJson: string }): string {
  return `{"success":true,"identifications":${identificationsJson}}`;
}
