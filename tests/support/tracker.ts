import { expect } from 'vitest';
import { fn, type TestEnv } from './app.ts';
import { createChildVia, uniqueDomain } from './seed.ts';

/** A tracker site as the identification and listing tests use it: its key, tracker and website. */
export interface TrackedSite {
  key: string;
  apiKeyId: string;
  trackingId: string;
  domain: string;
  websiteId: string;
}

/** A managed child of `partnerKey` with a website, created through the public API. */
export async function trackedChild(env: TestEnv, partnerKey: string, body: Record<string, unknown> = {}): Promise<TrackedSite> {
  const c = await createChildVia(env, partnerKey, { domain: uniqueDomain('tracked'), monthly_id_quota: 10, ...body });
  return {
    key: c.child.key,
    apiKeyId: c.child.api_key_id,
    trackingId: c.website.tracking_script_id,
    domain: c.website.domain,
    websiteId: c.website.id,
  };
}

/** A page view through collect, from `ip` as the socket's peer (a browser's beacon). */
export async function pageView(env: TestEnv, site: TrackedSite, ip: string, opts: { path?: string; session?: string; userAgent?: string } = {}) {
  const res = await env.app.request(
    fn('collect'),
    {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'user-agent': opts.userAgent ?? 'Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0' },
      body: JSON.stringify({
        tracking_script_id: site.trackingId,
        type: 'pageview',
        url: `https://${site.domain}${opts.path ?? '/'}`,
        session_id: opts.session ?? `s-${ip}`,
      }),
    },
    { incoming: { socket: { remoteAddress: ip } } },
  );
  expect(res.status).toBe(202);
}
