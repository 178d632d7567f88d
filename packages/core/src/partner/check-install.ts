import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { forbidden, notFound } from '../kernel/errors.ts';
import { Timestamp, Uuid } from '../kernel/schemas.ts';

export const CheckInstallInput = z.object({ child_api_key_id: Uuid });
export type CheckInstallInput = z.infer<typeof CheckInstallInput>;

export const InstallCheck = z
  .object({
    child_api_key_id: z.string().openapi({ format: 'uuid' }),
    domain: z.string().nullable(),
    tracking_script_id: z.string().nullable().openapi({ format: 'uuid' }),
    installed: z.boolean().openapi({ description: 'A page view from a browser (not a bot) has arrived from the child’s website' }),
    last_page_view_at: Timestamp.nullable(),
    page_views_24h: z.number().int(),
    bot_beacons_24h: z.number().int().openapi({ description: 'Beacons of the last 24 hours judged a bot’s: they arrive but identify nobody' }),
  })
  .openapi('InstallCheck');
export type InstallCheck = z.infer<typeof InstallCheck>;

/**
 * partner-install-check: whether the child's tracker is sending page views, read from what collect
 * stored (the events the data lifecycle still keeps). The console polls it until the first page
 * view arrives.
 */
export async function checkInstall({ ctx, input }: VerbArgs<CheckInstallInput, PartnerCtx>): Promise<InstallCheck> {
  const [child] = await ctx.db<{
    parent_api_key_id: string | null;
    website_id: string | null;
    domain: string | null;
    tracking_script_id: string | null;
  }>`
    select k.parent_api_key_id, w.id as website_id, w.domain, w.tracking_script_id::text as tracking_script_id
    from api_keys k left join websites w on w.api_key_id = k.id and w.status = 'active'
    where k.id = ${input.child_api_key_id}
    order by w.created_at desc nulls last limit 1`;
  if (!child) throw notFound('no such child key');
  if (child.parent_api_key_id !== ctx.caller.apiKeyId) throw forbidden('this child belongs to another partner');
  const [seen] = child.website_id
    ? await ctx.db<{ last_page_view_at: Date | null; page_views_24h: number; bot_beacons_24h: number }>`
        select max(received_at) filter (where kind = 'pageview' and not is_bot) as last_page_view_at,
               count(*) filter (where kind = 'pageview' and not is_bot and received_at > now() - interval '24 hours')::int as page_views_24h,
               count(*) filter (where is_bot and received_at > now() - interval '24 hours')::int as bot_beacons_24h
        from tracker_events where website_id = ${child.website_id}`
    : [];
  const last = seen?.last_page_view_at ? new Date(seen.last_page_view_at).toISOString() : null;
  return {
    child_api_key_id: input.child_api_key_id,
    domain: child.domain,
    tracking_script_id: child.tracking_script_id,
    installed: last !== null,
    last_page_view_at: last,
    page_views_24h: seen?.page_views_24h ?? 0,
    bot_beacons_24h: seen?.bot_beacons_24h ?? 0,
  };
}
