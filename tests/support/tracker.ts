import { expect } from 'vitest';
import { fn, socketPeer, type TestEnv } from './app.ts';
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

/** The user agent of a browser's beacon. */
export const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0';

export interface BeaconOptions {
  /** The socket's peer: the visitor's address as the server sees it. */
  from: string;
  /** Headers over a browser's (text/plain, its user agent), e.g. the page's Origin. */
  headers?: Record<string, string>;
  /** Headers left out of the beacon. */
  omit?: string[];
}

/** A beacon to collect as the tracker sends it: `body` as text/plain JSON, from `opts.from`. */
export async function beacon(env: Pick<TestEnv, 'app'>, body: unknown, opts: BeaconOptions) {
  const headers = new Headers({ 'content-type': 'text/plain;charset=UTF-8', 'user-agent': BROWSER_UA, ...opts.headers });
  for (const name of opts.omit ?? []) headers.delete(name);
  const res = await env.app.request(fn('collect'), { method: 'POST', headers, body: JSON.stringify(body) }, socketPeer(opts.from));
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

/** A page view through collect, from `ip` as the socket's peer (a browser's beacon). */
export async function pageView(env: TestEnv, site: TrackedSite, ip: string, opts: { path?: string; session?: string; userAgent?: string } = {}) {
  const body = {
    tracking_script_id: site.trackingId,
    type: 'pageview',
    url: `https://${site.domain}${opts.path ?? '/'}`,
    session_id: opts.session ?? `s-${ip}`,
  };
  const res = await beacon(env, body, { from: ip, ...(opts.userAgent ? { headers: { 'user-agent': opts.userAgent } } : {}) });
  expect(res.status).toBe(202);
}
