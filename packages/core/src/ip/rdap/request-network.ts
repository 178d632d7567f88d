/**
 * One RDAP query for an address (RFC 7480 / RFC 9082): `GET {base}ip/{address}` with
 * `Accept: application/rdap+json`. Everything about the exchange is bounded: one deadline covers
 * the redirects and the body; the body is read incrementally and abandoned past its cap; a redirect
 * is followed only to an origin the caller allows (the bootstrap's servers), at most a few times.
 * The outcome is a value, never a throw: the caller decides what each means for its cache and for
 * the server's budget.
 */
import { readBodyTextPrefix } from '../../kernel/net/bounded-body.ts';
import type { RdapAddress } from './address-range.ts';
import { type RdapNetwork, readNetwork } from './read-network.ts';

export type NetworkOutcome =
  /** The registry's most specific network holding the address. */
  | { kind: 'network'; network: RdapNetwork; server: string }
  /** The registry holds no network for it (404). */
  | { kind: 'absent'; server: string }
  /** The server said to wait (429, or 503 with Retry-After): `retryAfter` is its header. */
  | { kind: 'throttled'; server: string; retryAfter: string | null }
  /** A redirect led to a server whose budget is spent now: try again later, nobody is to blame. */
  | { kind: 'deferred'; server: string }
  /** No usable answer. `outage`: the server itself failed (timeout, connection, 5xx), so it is paused. */
  | { kind: 'failed'; server: string; reason: string; outage: boolean };

export interface RequestOptions {
  fetch: typeof fetch;
  timeoutMs: number;
  maxBodyBytes: number;
  maxRedirects: number;
  /** Whether a redirect may go to this origin; when it may, whether that server's budget allows it. */
  mayRedirectTo(origin: string): 'yes' | 'not-named' | 'no-budget';
}

/** Asks `base` (ending in `/`) about `address`. */
export async function requestNetwork(base: string, address: RdapAddress, opts: RequestOptions): Promise<NetworkOutcome> {
  const signal = AbortSignal.timeout(opts.timeoutMs);
  let url = new URL(`ip/${address.text}`, base);
  let server = url.origin;
  try {
    for (let hop = 0; ; hop++) {
      const res = await opts.fetch(url, { method: 'GET', headers: { Accept: 'application/rdap+json' }, redirect: 'manual', signal });
      // A runtime that hides redirects (an opaque redirect, status 0) leaves nothing to follow.
      if (res.type === 'opaqueredirect' || res.status === 0) return { kind: 'failed', server, reason: 'redirect not readable', outage: false };
      if (res.status >= 300 && res.status < 400) {
        discard(res);
        const location = res.headers.get('location');
        if (!location || hop >= opts.maxRedirects)
          return { kind: 'failed', server, reason: `redirect ${location ? 'loop' : 'without Location'}`, outage: false };
        const next = new URL(location, url);
        const verdict = next.protocol === 'https:' || next.protocol === 'http:' ? opts.mayRedirectTo(next.origin) : 'not-named';
        if (verdict === 'not-named')
          return { kind: 'failed', server, reason: `redirect to ${next.origin} refused: not an RDAP server the bootstrap names`, outage: false };
        if (verdict === 'no-budget') return { kind: 'deferred', server: next.origin };
        url = next;
        server = next.origin;
        continue;
      }
      if (res.status === 404) {
        discard(res);
        return { kind: 'absent', server };
      }
      if (res.status === 429 || (res.status === 503 && res.headers.has('retry-after'))) {
        discard(res);
        return { kind: 'throttled', server, retryAfter: res.headers.get('retry-after') };
      }
      if (!res.ok) {
        discard(res);
        return { kind: 'failed', server, reason: `HTTP ${res.status}`, outage: res.status >= 500 };
      }
      const { text, complete } = await readBodyTextPrefix(res, opts.maxBodyBytes);
      if (!complete) return { kind: 'failed', server, reason: `answer over ${opts.maxBodyBytes} bytes`, outage: false };
      const network = readNetwork(text, address);
      return network
        ? { kind: 'network', network, server }
        : { kind: 'failed', server, reason: 'not an RDAP ip network for this address', outage: false };
    }
  } catch (err) {
    const reason = signal.aborted ? `no answer within ${opts.timeoutMs} ms` : err instanceof Error ? err.message || err.name : 'request failed';
    return { kind: 'failed', server, reason, outage: true };
  }
}

// An unread body holds its connection; cancelling it lets fetch close or reuse it.
function discard(res: Response): void {
  res.body?.cancel().catch(() => undefined);
}
