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
  // The key's scope from its row, as list-visitors reads it: a website of the account that a key
  // scoped to its own websites does not own is answered as another account's. The account's ICPs
  // are the account's: a key scoped to its websites sees no scores, and nothing qualified; the
  // active ones are read here once (as array text), not once per identification.
  const [site] = await ctx.db<{ id: string; active_icps: string }>`
    select w.id,
           case when me.scope = 'account'
                then array(select p.id from icps p where p.account_id = k.account_id and p.workflow_status = 'active' order by p.id)
                else '{}' end::text as active_icps
    from websites w join api_keys k on k.id = w.api_key_id join api_keys me on me.id = ${input.key.apiKeyId}
    where w.id = ${input.website_id} and k.account_id = ${input.key.accountId}
      and (me.scope = 'account' or w.api_key_id = me.id)`;
  if (!site) throw notFound('no such website for this key');
  // Custom plans, as list-visitors: one statement serves every combination of filters.
  const [page] = await ctx.db.begin(async (tx) => {
    await tx`set local plan_cache_mode = force_custom_plan`;
    return tx<{ identifications: string }>`
    with page as (
      -- The page's identifications first, newest first, so that the rows the filters or the offset
      -- skip are never fetched, and the JSON is built for the page's rows only. Custom plans leave
      -- one of the two branches, by whether the page lists what is qualified.
      (
        -- Read from the index of the website's identifications alone (migration 0034); for
        -- qualified=false each is probed in the index of qualifying scores (a scalar subquery: as an
        -- anti-join the planner hashed every qualified score of the account first).
        select i.id, i.created_at from identifications i
        where ${input.qualified ?? null}::boolean is not true
          and i.website_id = ${site.id}
          and (${input.status ?? null}::text is null or i.status = ${input.status ?? null})
          and (${input.type ?? null}::text is null or i.identification_type = ${input.type ?? null})
          and (${input.qualified ?? null}::boolean is null or (
            select true from icp_scores s
            where s.identification_id = i.id and s.qualified and s.icp_id = any(${site.active_icps}::uuid[])
            limit 1) is null)
        order by i.created_at desc, i.id
        limit ${input.limit} offset ${input.offset}
      )
      union all
      (
        -- Qualified: some active ICP of the account qualifies it (a paused ICP's scores do not count),
        -- read in list order from the website's qualifying scores alone (migration 0041); an
        -- identification two ICPs qualify is met twice in a row there, and counted once.
        select q.identification_id, q.listed_at from (
          select distinct s.listed_at, s.identification_id from icp_scores s
          where ${input.qualified ?? null}::boolean is true
            and s.website_id = ${site.id} and s.qualified and s.icp_id = any(${site.active_icps}::uuid[])
          order by s.listed_at desc, s.identification_id
        ) q
        where (${input.status ?? null}::text is null and ${input.type ?? null}::text is null) or exists (
          select 1 from identifications i
          where i.id = q.identification_id
            and (${input.status ?? null}::text is null or i.status = ${input.status ?? null})
            and (${input.type ?? null}::text is null or i.identification_type = ${input.type ?? null}))
        order by q.listed_at desc, q.identification_id
        limit ${input.limit} offset ${input.offset}
      )
    )
    select coalesce(json_agg(json_build_object(
      'id', i.id, 'identification_type', i.identification_type, 'status', i.status, 'identified_at', sl_iso(i.identified_at),
      'individual', case when i.identification_type = 'individual' then json_build_object(
        'linkedin_url', i.person_linkedin_url, 'linkedin_name', i.person_linkedin_name,
        'linkedin_title', i.person_linkedin_title, 'linkedin_company', i.person_linkedin_company) end,
      'company', case when i.status = 'identified' then json_build_object(
        'name', i.company_name, 'domain', i.domain, 'industry', i.industry, 'employee_count', i.employee_range,
        'location', coalesce(i.location, nullif(i.country, '')), 'linkedin_url', i.company_linkedin_url) end,
      'icp_scores', coalesce((
        select json_agg(json_build_object('icp_id', p.id, 'icp_name', p.name, 'score', s.score, 'qualified', s.qualified,
                                          'ai_summary', s.ai_summary) order by s.score desc, p.created_at, p.id)
        from icp_scores s join icps p on p.id = s.icp_id
        where s.identification_id = i.id and s.icp_id = any(${site.active_icps}::uuid[])
      ), '[]'::json),
      'session', json_build_object(
        'pages_visited', coalesce(v.pages_viewed, 0), 'duration_seconds', coalesce(v.active_ms / 1000, 0),
        'referrer', coalesce(v.referrer, '')))
      order by page.created_at desc, page.id), '[]'::json)::text as identifications
    from page
    join identifications i on i.id = page.id
    left join visitors v on v.website_id = i.website_id and v.ip = i.ip`;
  });
  return { identificationsJson: page?.identifications ?? '[]' };
}

/** The success body of identification-list, `{success: true, identifications}`, with the rows spliced in unparsed. */
export function identificationsPageBody({ identificationsJson }: { identificationsJson: string }): string {
  return `{"success":true,"identifications":${identificationsJson}}`;
}
