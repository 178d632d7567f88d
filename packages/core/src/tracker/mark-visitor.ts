import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';
import { IpAddress } from '../kernel/schemas.ts';
import { normaliseTrackerDomain } from './normalise-tracker-domain.ts';

export const MarkVisitorInput = z
  .object({
    tracker_site: z.string().max(253).openapi({ description: 'The tracker the visitor was seen on: a list-visitors row’s tracker_site' }),
    ip: IpAddress.openapi({ description: 'The visitor’s address: the row’s ip' }),
    is_watched: z.boolean().optional().openapi({ description: 'Watch (true) or stop watching (false); omitted: unchanged' }),
    is_pinned: z.boolean().optional().openapi({ description: 'Pin (true) or unpin (false); omitted: unchanged' }),
  })
  .strict()
  .refine((b) => b.is_watched !== undefined || b.is_pinned !== undefined, { message: 'give is_watched, is_pinned or both' })
  .openapi('MarkVisitorRequest');
export type MarkVisitorInput = z.infer<typeof MarkVisitorInput>;

export const VisitorMarks = z
  .object({
    tracker_site: z.string(),
    ip: z.string().openapi({ description: 'As list-visitors writes it' }),
    is_watched: z.boolean(),
    is_pinned: z.boolean(),
  })
  .openapi('VisitorMarks');
export type VisitorMarks = z.infer<typeof VisitorMarks>;

/**
 * visitor-mark: sets a listed visitor's marks (watched, pinned), which list-visitors answers and
 * filters on. The visitor is a tracker row list-visitors shows the key — an identified visitor of a
 * tracker the key can read (its account's, or only its own for a key scoped to its websites) — so
 * another account's visitor, an unidentified one and an api row (a lookup has no visitor) are all
 * "no such visitor", 404. One statement: the scope check and the change cannot be split by another
 * writer. A mark omitted keeps its value; the answer is the marks after the change.
 */
export async function markVisitor({ ctx, input }: VerbArgs<MarkVisitorInput & { key: KeyRecord }>): Promise<VisitorMarks> {
  const site = normaliseTrackerDomain(input.tracker_site, 'tracker_site');
  const [row] = await ctx.db<{ ip: string; is_watched: boolean; is_pinned: boolean }>`
    update visitors v
    set is_watched = coalesce(${input.is_watched ?? null}::boolean, v.is_watched),
        is_pinned = coalesce(${input.is_pinned ?? null}::boolean, v.is_pinned)
    from websites w join api_keys k on k.id = w.api_key_id
    join api_keys me on me.id = ${input.key.apiKeyId}
    where w.domain = ${site} and k.account_id = ${input.key.accountId} and (me.scope = 'account' or w.api_key_id = me.id)
      and v.website_id = w.id and v.ip = ${input.ip}::inet and v.identification_id is not null
    returning host(v.ip) as ip, v.is_watched, v.is_pinned`;
  if (!row) throw notFound('no such visitor on the key’s trackers: give a tracker row’s tracker_site and ip from list-visitors');
  return { tracker_site: site, ip: row.ip, is_watched: row.is_watched, is_pinned: row.is_pinned };
}
