import { z } from '@hono/zod-openapi';
import { isbot } from 'isbot';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { Uuid } from '../kernel/schemas.ts';
import { appendTrackerEvent } from './append-events.ts';
import { spendBeaconBudgets } from './beacon-budgets.ts';

/**
 * One beacon from the tracker script. Unknown fields are dropped rather than refused, so a tracker a
 * version ahead of (or behind) the server still counts — and a field such as `ip` in the body is
 * never read: the visitor's address is the one the server saw.
 */
export const CollectEventInput = z
  .object({
    tracking_script_id: Uuid,
    type: z.enum(['pageview', 'engagement']),
    url: z.string().min(1).max(2048).openapi({ description: 'The page, as the browser shows it' }),
    referrer: z.string().max(2048).optional(),
    session_id: z.string().min(1).max(64).openapi({ description: 'Per tab, from sessionStorage; no cookies' }),
    beacon_id: z.string().min(1).max(64).optional().openapi({ description: 'Engagement beacons: applied once however often sent' }),
    active_ms: z
      .number()
      .int()
      .min(0)
      .max(30 * 60 * 1000, 'must be at most 30 minutes per beacon')
      .optional()
      .openapi({ description: 'Engagement beacons: engaged time since the previous beacon of the page' }),
    webdriver: z.boolean().optional().openapi({ description: 'The browser reported automation (navigator.webdriver)' }),
  })
  .refine((e) => e.type !== 'engagement' || (e.active_ms !== undefined && e.beacon_id !== undefined), {
    message: 'an engagement beacon needs active_ms and beacon_id',
    path: ['active_ms'],
  })
  .openapi('CollectEvent');
export type CollectEventInput = z.infer<typeof CollectEventInput>;

/** The host of an http(s) URL, lower case, or null when it is not one. */
function pageHost(url: string): string | null {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.hostname.toLowerCase().replace(/\.$/, '') : null;
  } catch {
    return null;
  }
}

/**
 * The host the browser says the beacon came from: its Origin, or, when it sent none, its Referer;
 * null when it sent neither (a non-browser client, or a referrer policy of no-referrer), and then
 * only the body's url is judged. `foreign` when what it sent cannot be a page of any website: an
 * opaque origin (`Origin: null`: a sandboxed iframe, a file:// page, a data: URL, which a page on
 * the website never is and a page elsewhere can make any visitor's browser send) or anything but an
 * http(s) origin. An empty header is taken as absent.
 */
function browserHost(origin: string | undefined, referer: string | undefined): string | null | 'foreign' {
  const sent = origin?.trim() || referer?.trim();
  if (!sent) return null;
  return pageHost(sent) ?? 'foreign';
}

/** No browser sends a beacon without a user agent: none (or only spaces) is a script's, so a bot's. */
export function isBotUserAgent(userAgent: string | undefined): boolean {
  const ua = userAgent?.trim() ?? '';
  return ua === '' || isbot(ua);
}

/**
 * Appends one tracker event (`sl_collect_events`, through the process's group commit) and nothing
 * else: no lookup, no charge, so collect answers as soon as the event is committed. Dropped quietly,
 * so a browser learns nothing it could probe with: a visitor without a usable address, a page whose
 * host is not the website's domain or a subdomain (the account's allowed_domains instead, when it
 * set any), a browser Origin (or Referer) that the same rule refuses, an unknown or inactive
 * website, a revoked key. Over collect's budgets (beacon-budgets.ts) a beacon is dropped the same
 * way, and counted as filtered. Bots (by user agent, an empty or missing one included, or
 * automation the browser admits to) are recorded as bots, never identified, never charged.
 */
export async function collectEvent({
  ctx,
  input,
}: VerbArgs<
  CollectEventInput & { ip: string | null; userAgent: string | undefined; origin?: string | undefined; referer?: string | undefined },
  CoreDeps
>): Promise<{ stored: boolean }> {
  const host = pageHost(input.url);
  const originHost = browserHost(input.origin, input.referer);
  if (!input.ip || !host || originHost === 'foreign') return { stored: false };
  const isBot = input.webdriver === true || isBotUserAgent(input.userAgent);
  const verdict = await spendBeaconBudgets(ctx, {
    trackingScriptId: input.tracking_script_id,
    pageHost: host,
    originHost,
    ip: input.ip,
    isBot,
  });
  if (verdict !== 'admit') return { stored: false };
  // Engaged time and its beacon id belong to engagement beacons; a page view carrying them has them dropped.
  const engagement = input.type === 'engagement';
  const stored = await appendTrackerEvent(ctx, {
    tracking_script_id: input.tracking_script_id,
    kind: input.type,
    page_host: host,
    origin_host: originHost,
    ip: input.ip,
    is_bot: isBot,
    session_id: input.session_id,
    url: input.url,
    referrer: input.referrer ?? null,
    active_ms: engagement ? (input.active_ms ?? null) : null,
    beacon_id: engagement ? (input.beacon_id ?? null) : null,
    user_agent: input.userAgent?.slice(0, 512) ?? null,
  });
  return { stored };
}
