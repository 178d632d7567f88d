import { z } from '@hono/zod-openapi';
import { isbot } from 'isbot';
import type { CoreDeps, VerbArgs } from '../context.ts';
import { Uuid } from '../schemas.ts';
import { appendTrackerEvent } from './append-events.ts';

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

/** The host of a page URL, lower case, or null when it is not an http(s) URL. */
function pageHost(url: string): string | null {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.hostname.toLowerCase().replace(/\.$/, '') : null;
  } catch {
    return null;
  }
}

/**
 * Appends one tracker event (`sl_collect_events`, through the process's group commit) and nothing
 * else: no lookup, no charge, so collect answers as soon as the event is committed. Dropped quietly,
 * so a browser learns nothing it could probe with: a visitor without a usable address, a page whose
 * host is not the website's domain or a subdomain (the account's allowed_domains instead, when it set any), an unknown or inactive website, a revoked key.
 * Bots (by user agent, or automation the browser admits to) are recorded as bots, never identified,
 * never charged.
 */
export async function collectEvent({
  ctx,
  input,
}: VerbArgs<CollectEventInput & { ip: string | null; userAgent: string | undefined }, CoreDeps>): Promise<{ stored: boolean }> {
  const host = pageHost(input.url);
  if (!input.ip || !host) return { stored: false };
  // Engaged time and its beacon id belong to engagement beacons; a page view carrying them has them dropped.
  const engagement = input.type === 'engagement';
  const stored = await appendTrackerEvent(ctx, {
    tracking_script_id: input.tracking_script_id,
    kind: input.type,
    page_host: host,
    ip: input.ip,
    is_bot: input.webdriver === true || isbot(input.userAgent ?? ''),
    session_id: input.session_id,
    url: input.url,
    referrer: input.referrer ?? null,
    active_ms: engagement ? (input.active_ms ?? null) : null,
    beacon_id: engagement ? (input.beacon_id ?? null) : null,
    user_agent: input.userAgent?.slice(0, 512) ?? null,
  });
  return { stored };
}
