import { z } from '@hono/zod-openapi';
import type { CoreDeps } from '../kernel/context.ts';
import { describeNetworkError, parseWebhookUrl } from '../kernel/net/webhook-destination.ts';

/** What of the page is read: its HTML's head and more, never a whole large page. */
const PAGE_MAX_BYTES = 512 * 1024;
const PAGE_TIMEOUT_MS = 5_000;

export const PageInspection = z
  .object({
    url: z.string(),
    status: z.number().int().nullable().openapi({ description: 'The page’s HTTP status; null when it could not be fetched' }),
    error: z.string().nullable().openapi({ description: 'Why the page could not be fetched' }),
    snippet_found: z.boolean().nullable().openapi({ description: 'The tracker’s id appears in the page’s HTML (null: not fetched)' }),
    content_security_policy: z.string().nullable(),
    script_allowed: z.boolean().nullable().openapi({ description: 'The CSP lets the page load the tracker (null: cannot tell)' }),
    beacons_allowed: z.boolean().nullable().openapi({ description: 'The CSP lets the tracker send its beacons (null: cannot tell)' }),
  })
  .openapi('InstallPageInspection');
export type PageInspection = z.infer<typeof PageInspection>;

interface Policy {
  directives: Map<string, string[]>;
}

/** Every policy of a header (several may be sent, comma-joined); each must allow a load. */
function parsePolicies(header: string): Policy[] {
  return header
    .split(',')
    .map((one) => {
      const directives = new Map<string, string[]>();
      for (const part of one.split(';')) {
        const [name, ...sources] = part.trim().split(/\s+/);
        if (name && !directives.has(name.toLowerCase()))
          directives.set(
            name.toLowerCase(),
            sources.map((s) => s.toLowerCase()),
          );
      }
      return { directives };
    })
    .filter((p) => p.directives.size > 0);
}

/** Whether one source expression (CSP Level 3 host-source, scheme-source, keywords) admits `target`. */
function sourceAllows(source: string, target: URL, page: URL): boolean | null {
  if (source === '*') return target.protocol === 'https:' || target.protocol === 'http:';
  if (source === "'self'") return target.origin === page.origin;
  if (source === "'none'") return false;
  if (source === "'strict-dynamic'") return null;
  if (/^'/.test(source)) return false; // nonces, hashes, 'unsafe-inline': never a host
  if (/^[a-z][a-z0-9+.-]*:$/.test(source)) return target.protocol === source || (source === 'http:' && target.protocol === 'https:');
  const m = /^(?:([a-z][a-z0-9+.-]*):\/\/)?(\*\.)?([^/:]+|\*)(?::(\d+|\*))?(\/.*)?$/.exec(source);
  if (!m) return false;
  const [, scheme, wildcard, host, port] = m;
  if (scheme && !(target.protocol === `${scheme}:` || (scheme === 'http' && target.protocol === 'https:'))) return false;
  if (!scheme && target.protocol !== page.protocol && !(page.protocol === 'http:' && target.protocol === 'https:')) return false;
  const name = target.hostname.toLowerCase();
  if (host !== '*' && !(wildcard ? name.endsWith(`.${host}`) : name === host)) return false;
  const targetPort = target.port || (target.protocol === 'https:' ? '443' : '80');
  if (port && port !== '*' && port !== targetPort) return false;
  return true;
}

/** Whether every policy's `directive` (or its default-src) admits `target`; null when one cannot tell. */
export function cspAllows(header: string, directive: 'script-src' | 'connect-src', target: URL, page: URL): boolean | null {
  let verdict: boolean | null = true;
  for (const policy of parsePolicies(header)) {
    const sources = policy.directives.get(directive) ?? policy.directives.get('default-src');
    if (!sources) continue;
    const answers = sources.map((s) => sourceAllows(s, target, page));
    if (answers.includes(true)) continue;
    if (answers.includes(null)) verdict = verdict === false ? false : null;
    else verdict = false;
  }
  return verdict;
}

/**
 * The page to inspect: `https://<domain>/`, or the caller's page on the website's domain or a
 * subdomain. With ALLOW_PRIVATE_WEBHOOKS (local development) a page on a loopback or private address
 * is taken too: a site being built on the developer's machine. Null: not a page of the website.
 */
export function installInspectionUrl(domain: string, pageUrl: string | undefined, allowPrivate: boolean): URL | null {
  if (pageUrl === undefined) return new URL(`https://${domain}/`);
  let url: URL;
  try {
    url = new URL(pageUrl);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (host === domain || host.endsWith(`.${domain}`)) return url;
  const local = /^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.)|^\[?::1\]?$|^localhost$/.test(host);
  return allowPrivate && local ? url : null;
}

/** The origin the page loads the tracker from: the snippet's, else the service's public address. */
function trackerOrigin(html: string, trackingId: string, publicBaseUrl: string | undefined, page: URL): URL | null {
  const src = new RegExp(`src\\s*=\\s*["']([^"']*/t/(?:${trackingId}\\.js|tracker\\.js))["']`, 'i').exec(html)?.[1];
  try {
    if (src) return new URL(src, page);
  } catch {
    // an unreadable src: fall back to the service's address
  }
  return publicBaseUrl ? new URL(publicBaseUrl) : null;
}

/**
 * The install check's look at a page of the child's website (its home page unless the caller names
 * one: installInspectionUrl), fetched through the webhook transport (its
 * SSRF guard, no redirects, a 5 s timeout, at most 512 KiB read): whether the snippet is in the
 * HTML, and whether the page's Content-Security-Policy lets the tracker load and send its beacons.
 * A page that cannot be fetched says why and nothing else.
 */
export async function inspectInstallPage(ctx: CoreDeps, page: URL, trackingId: string): Promise<PageInspection> {
  const unread = (error: string): PageInspection => ({
    url: page.href,
    status: null,
    error,
    snippet_found: null,
    content_security_policy: null,
    script_allowed: null,
    beacons_allowed: null,
  });
  try {
    parseWebhookUrl(page.href, { allowPrivate: ctx.allowPrivateWebhooks }, 'the website');
  } catch (err) {
    return unread(err instanceof Error ? err.message : String(err));
  }
  let answer: Awaited<ReturnType<CoreDeps['webhooks']['request']>>;
  try {
    answer = await ctx.webhooks.request(page.href, {
      method: 'GET',
      headers: { accept: 'text/html', 'user-agent': 'Sightline-InstallCheck/1 (the console install check)' },
      timeoutMs: PAGE_TIMEOUT_MS,
      maxAnswerBytes: PAGE_MAX_BYTES,
    });
  } catch (err) {
    return unread(describeNetworkError(err));
  }
  const html = answer.body ?? '';
  const csp = answer.headers?.['content-security-policy'] ?? null;
  const origin = trackerOrigin(html, trackingId, ctx.publicBaseUrl, page);
  const ok = answer.status >= 200 && answer.status < 300;
  return {
    url: page.href,
    status: answer.status,
    error: ok ? null : `the page answered HTTP ${answer.status}`,
    snippet_found: ok ? html.includes(trackingId) : null,
    content_security_policy: csp,
    script_allowed: csp === null ? true : origin ? cspAllows(csp, 'script-src', origin, page) : null,
    beacons_allowed: csp === null ? true : origin ? cspAllows(csp, 'connect-src', origin, page) : null,
  };
}
