import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { badRequest } from '../kernel/errors.ts';

const DAY_MS = 86_400_000;
/** The longest range one call may ask for: a year of days. */
const MAX_DAYS = 366;

export const VisitorStatsInput = z.object({
  since: z.iso.datetime({ offset: true }).optional().openapi({ description: 'Start of the range; default 30 days before `until`' }),
  until: z.iso.datetime({ offset: true }).optional().openapi({ description: 'End of the range; default now. At most 366 days after `since`' }),
});
export type VisitorStatsInput = z.infer<typeof VisitorStatsInput>;

const TRAFFIC = ['business', 'isp', 'hosting', 'vpn', 'education', 'government', 'unknown'] as const;
/** Addresses a traffic rule excluded, by the rule's kind (traffic-rules.ts). */
const EXCLUDED = ['excluded_cidr', 'excluded_domain', 'excluded_path', 'excluded_country'] as const;
type MixKey = (typeof TRAFFIC)[number] | 'bots' | (typeof EXCLUDED)[number];

export const VisitorStats = z
  .object({
    since: z.string().openapi({ format: 'date-time' }),
    until: z.string().openapi({ format: 'date-time' }),
    identified_per_day: z
      .array(z.object({ day: z.string().openapi({ format: 'date', description: 'UTC day' }), companies: z.number().int() }))
      .openapi({ description: 'Distinct companies identified each UTC day of the range (days without one are absent)' }),
    traffic_mix: z
      .object(Object.fromEntries([...TRAFFIC, 'bots', ...EXCLUDED].map((t) => [t, z.number().int()])) as Record<MixKey, z.ZodNumber>)
      .openapi({
        description:
          'Addresses the trackers saw in the range, by what the waterfall found them to be (only business traffic uses IDs), addresses whose beacons ' +
          'were a bot’s, and addresses a traffic rule excluded, by the rule’s kind: excluded_cidr and excluded_path count addresses of excluded ' +
          'beacons, excluded_country and excluded_domain addresses whose identification was excluded (none of them uses an ID)',
      }),
  })
  .openapi('VisitorStats');
export type VisitorStats = z.infer<typeof VisitorStats>;

/**
 * The charts of the console's site view, over the trackers the key can read (its account's, or only
 * its own for a key scoped to its websites, as list-visitors): identified companies per UTC day,
 * and the traffic mix that explains why few addresses are companies.
 */
export async function visitorStats({ ctx, input }: VerbArgs<VisitorStatsInput & { key: KeyRecord }>): Promise<VisitorStats> {
  const until = input.until ? new Date(input.until) : new Date();
  const since = input.since ? new Date(input.since) : new Date(until.getTime() - 30 * DAY_MS);
  if (since.getTime() >= until.getTime()) throw badRequest('since must be before until');
  if (until.getTime() - since.getTime() > MAX_DAYS * DAY_MS) throw badRequest(`since and until may be at most ${MAX_DAYS} days apart`);
  const { apiKeyId, accountId } = input.key;
  const [perDay, mix, bots, excluded] = await Promise.all([
    ctx.db<{ day: string; companies: number }>`
      select to_char(date_trunc('day', i.identified_at at time zone 'UTC'), 'YYYY-MM-DD') as day,
             count(distinct coalesce(i.domain, i.company_name))::int as companies
      from identifications i
      where i.website_id in (select w.id from websites w join api_keys k on k.id = w.api_key_id join api_keys me on me.id = ${apiKeyId}
                             where k.account_id = ${accountId} and (me.scope = 'account' or w.api_key_id = me.id)) and i.status = 'identified'
        and i.identified_at >= ${since} and i.identified_at < ${until}
      group by 1 order by 1`,
    ctx.db<{ traffic_type: string; addresses: number }>`
      select i.traffic_type, count(distinct i.ip)::int as addresses
      from identifications i
      where i.website_id in (select w.id from websites w join api_keys k on k.id = w.api_key_id join api_keys me on me.id = ${apiKeyId}
                             where k.account_id = ${accountId} and (me.scope = 'account' or w.api_key_id = me.id)) and i.status in ('identified', 'failed') and i.traffic_type is not null
        and i.created_at >= ${since} and i.created_at < ${until}
      group by 1`,
    ctx.db<{ addresses: number }>`
      select count(distinct e.ip)::int as addresses from tracker_events e
      where e.website_id in (select w.id from websites w join api_keys k on k.id = w.api_key_id join api_keys me on me.id = ${apiKeyId}
                             where k.account_id = ${accountId} and (me.scope = 'account' or w.api_key_id = me.id)) and e.is_bot and e.received_at >= ${since} and e.received_at < ${until}`,
    // Excluded by a rule: beacons the worker marked (cidr, path), identifications the settle excluded (country, domain).
    ctx.db<{ reason: string; addresses: number }>`
      with sites as (
        select w.id from websites w join api_keys k on k.id = w.api_key_id join api_keys me on me.id = ${apiKeyId}
        where k.account_id = ${accountId} and (me.scope = 'account' or w.api_key_id = me.id)
      )
      select 'excluded_' || e.excluded_by as reason, count(distinct e.ip)::int as addresses from tracker_events e
      where e.website_id in (select id from sites) and e.excluded_by is not null and e.received_at >= ${since} and e.received_at < ${until}
      group by 1
      union all
      select 'excluded_' || i.excluded_by, count(distinct i.ip)::int from identifications i
      where i.website_id in (select id from sites) and i.status = 'excluded' and i.created_at >= ${since} and i.created_at < ${until}
      group by 1`,
  ]);
  const traffic = Object.fromEntries([...TRAFFIC, 'bots', ...EXCLUDED].map((t) => [t, 0])) as Record<MixKey, number>;
  for (const row of mix)
    if ((TRAFFIC as readonly string[]).includes(row.traffic_type)) traffic[row.traffic_type as (typeof TRAFFIC)[number]] = row.addresses;
  traffic.bots = bots[0]?.addresses ?? 0;
  for (const row of excluded)
    if ((EXCLUDED as readonly string[]).includes(row.reason)) traffic[row.reason as (typeof EXCLUDED)[number]] = row.addresses;
  return { since: since.toISOString(), until: until.toISOString(), identified_per_day: perDay, traffic_mix: traffic };
}
