import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { badRequest, forbidden, notFound } from '../kernel/errors.ts';
import { QueryBoolean, Timestamp, Uuid } from '../kernel/schemas.ts';
import { inspectInstallPage, installInspectionUrl, PageInspection } from './inspect-install-page.ts';

export const CheckInstallInput = z.object({
  child_api_key_id: Uuid,
  inspect: QueryBoolean.optional().openapi({
    type: 'string',
    enum: ['true', 'false'],
    description: 'Fetch a page of the website and look for the snippet and a blocking CSP',
  }),
  page_url: z
    .string()
    .max(2048)
    .optional()
    .openapi({ description: 'With inspect: the page to look at, on the website’s domain (default its home page over https)' }),
});
export type CheckInstallInput = z.infer<typeof CheckInstallInput>;

const CAUSES = [
  'page_unreachable',
  'snippet_missing',
  'csp_blocks_script',
  'csp_blocks_beacons',
  'consent_pending',
  'do_not_track',
  'ad_blocker',
  'no_visits_yet',
] as const;
type Cause = { code: (typeof CAUSES)[number]; message: string };

/** Why page views may not arrive: what the page showed first, then what only a browser can tell. */
function likelyCauses(page: PageInspection | null, botsOnly: boolean): Cause[] {
  const causes: Cause[] = [];
  if (page?.error) causes.push({ code: 'page_unreachable', message: `${page.url} could not be read: ${page.error}` });
  if (page?.snippet_found === false) {
    causes.push({ code: 'snippet_missing', message: `the tracker snippet is not in ${page.url} (a tag manager may add it after load)` });
  }
  if (page?.script_allowed === false) {
    causes.push({ code: 'csp_blocks_script', message: 'the page’s Content-Security-Policy (script-src) does not allow the tracker’s host' });
  }
  if (page?.beacons_allowed === false) {
    causes.push({
      code: 'csp_blocks_beacons',
      message: 'the page’s Content-Security-Policy (connect-src) does not allow sending beacons to the tracker’s host',
    });
  }
  causes.push(
    { code: 'consent_pending', message: 'the tracker waits for consent (consent mode) and no visitor has given it yet' },
    { code: 'do_not_track', message: 'visitors whose browsers send Do Not Track or Global Privacy Control are not tracked' },
    { code: 'ad_blocker', message: 'an ad or tracking blocker stops the script in some browsers' },
  );
  causes.push({
    code: 'no_visits_yet',
    message: botsOnly ? 'only bots’ beacons have arrived: open the site in a browser' : 'no browser has opened a page with the snippet yet',
  });
  return causes;
}

export const InstallCheck = z
  .object({
    child_api_key_id: z.string().openapi({ format: 'uuid' }),
    domain: z.string().nullable(),
    tracking_script_id: z.string().nullable().openapi({ format: 'uuid' }),
    installed: z.boolean().openapi({ description: 'A page view from a browser (not a bot) has arrived from the child’s website' }),
    last_page_view_at: Timestamp.nullable(),
    page_views_24h: z.number().int(),
    bot_beacons_24h: z.number().int().openapi({ description: 'Beacons of the last 24 hours judged a bot’s: they arrive but identify nobody' }),
    page: PageInspection.nullable().openapi({ description: 'What the page showed (with inspect=true)' }),
    likely_causes: z
      .array(z.object({ code: z.enum(CAUSES), message: z.string() }))
      .openapi({ description: 'While nothing has arrived: what most likely keeps page views away, most likely first' }),
  })
  .openapi('InstallCheck');
export type InstallCheck = z.infer<typeof InstallCheck>;

/**
 * partner-install-check: whether the child's tracker is sending page views, read from what collect
 * stored (the events the data lifecycle still keeps). The console polls it until the first page
 * view arrives; until then it says what most likely keeps them away, and with `inspect` it first
 * reads a page of the website for the snippet and a blocking CSP (inspect-install-page.ts).
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
  let page: PageInspection | null = null;
  if (input.inspect && child.domain && child.tracking_script_id) {
    const url = installInspectionUrl(child.domain, input.page_url, ctx.allowPrivateWebhooks);
    if (!url) throw badRequest(`page_url must be a page of ${child.domain} (or one of its subdomains)`);
    page = await inspectInstallPage(ctx, url, child.tracking_script_id);
  } else if (input.page_url !== undefined) throw badRequest('page_url is only used with inspect=true');
  return {
    child_api_key_id: input.child_api_key_id,
    domain: child.domain,
    tracking_script_id: child.tracking_script_id,
    installed: last !== null,
    last_page_view_at: last,
    page_views_24h: seen?.page_views_24h ?? 0,
    bot_beacons_24h: seen?.bot_beacons_24h ?? 0,
    page,
    likely_causes: last === null ? likelyCauses(page, (seen?.bot_beacons_24h ?? 0) > 0) : [],
  };
}
