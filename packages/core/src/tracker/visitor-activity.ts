import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';
import { IpAddress, Timestamp } from '../kernel/schemas.ts';
import { normaliseTrackerDomain } from './normalise-tracker-domain.ts';

/** Page views a visitor's page lists at most, newest first. */
const PAGES_SHOWN = 50;

export const VisitorActivityInput = z.object({
  tracker_site: z.string().max(253).openapi({ description: 'The tracker the visitor was seen on: a list-visitors row’s tracker_site' }),
  ip: IpAddress.openapi({ description: 'The visitor’s address: the row’s ip' }),
});
export type VisitorActivityInput = z.infer<typeof VisitorActivityInput>;

export const VisitorActivity = z
  .object({
    tracker_site: z.string(),
    ip: z.string(),
    pages: z
      .array(z.object({ url: z.string(), at: Timestamp }))
      .openapi({ description: `Its page views of its last day on the site (at most ${PAGES_SHOWN}), newest first` }),
    icp_scores: z
      .array(z.object({ icp_id: z.string(), icp_name: z.string(), score: z.number(), qualified: z.boolean(), ai_summary: z.string() }))
      .openapi({
        description: 'Its identification’s scores against the account’s active ICPs, highest first (none for a key scoped to its websites)',
      }),
  })
  .openapi('VisitorActivity');
export type VisitorActivity = z.infer<typeof VisitorActivity>;

/**
 * visitor-activity: what a visitor's page shows beyond its list-visitors row — the pages it viewed on
 * its last day on the site (read from the raw events while the data lifecycle keeps them) and its ICP
 * scores. The visitor is found as visitor-mark finds it (a tracker row the key can read, else 404);
 * the scores are the account's, so a key scoped to its own websites gets none (as identification-list).
 */
export async function visitorActivity({ ctx, input }: VerbArgs<VisitorActivityInput & { key: KeyRecord }>): Promise<VisitorActivity> {
  const site = normaliseTrackerDomain(input.tracker_site, 'tracker_site');
  const [visitor] = await ctx.db<{ website_id: string; ip: string; last_seen: Date; identification_id: string; account_wide: boolean }>`
    select v.website_id, host(v.ip) as ip, v.last_seen, v.identification_id, me.scope = 'account' as account_wide
    from websites w join api_keys k on k.id = w.api_key_id
    join api_keys me on me.id = ${input.key.apiKeyId}
    join visitors v on v.website_id = w.id and v.ip = ${input.ip}::inet
    where w.domain = ${site} and k.account_id = ${input.key.accountId} and (me.scope = 'account' or w.api_key_id = me.id)
      and v.identification_id is not null`;
  if (!visitor) throw notFound('no such visitor on the key’s trackers: give a tracker row’s tracker_site and ip from list-visitors');
  const [pages, scores] = await Promise.all([
    ctx.db<{ url: string; at: Date }>`
      select t.url, t.received_at as at from tracker_events t
      where t.website_id = ${visitor.website_id} and t.ip = ${visitor.ip}::inet and t.kind = 'pageview' and not t.is_bot
        and t.received_at >= ${visitor.last_seen}::timestamptz - interval '1 day'
      order by t.received_at desc limit ${PAGES_SHOWN}`,
    visitor.account_wide
      ? ctx.db<{ icp_id: string; icp_name: string; score: number; qualified: boolean; ai_summary: string }>`
          select p.id as icp_id, p.name as icp_name, s.score, s.qualified, s.ai_summary
          from icp_scores s join icps p on p.id = s.icp_id
          where s.identification_id = ${visitor.identification_id} and p.workflow_status = 'active'
          order by s.score desc, p.created_at, p.id`
      : [],
  ]);
  return {
    tracker_site: site,
    ip: visitor.ip,
    pages: pages.map((p) => ({ url: p.url, at: new Date(p.at).toISOString() })),
    icp_scores: scores,
  };
}
