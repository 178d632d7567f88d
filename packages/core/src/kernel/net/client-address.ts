import { groupsToBigint, parseCidr, parseIp } from './ip.ts';

/**
 * The proxies whose word about the client's address we take (`TRUSTED_PROXIES`): the load balancer
 * or CDN in front of the service, and nobody else.
 */
export interface TrustedProxies {
  readonly empty: boolean;
  contains(ip: string): boolean;
}

/** A trusted-proxy set from CIDRs (already validated by the configuration). */
export function trustedProxies(cidrs: readonly string[]): TrustedProxies {
  const v4: { start: number; end: number }[] = [];
  const v6: { start: bigint; end: bigint }[] = [];
  for (const text of cidrs) {
    const c = parseCidr(text);
    if (c?.version === 4) v4.push({ start: c.start, end: c.end });
    else if (c?.version === 6) v6.push({ start: c.start, end: c.end });
  }
  return {
    empty: v4.length + v6.length === 0,
    contains(ip) {
      const p = parseIp(unmapped(ip));
      if (!p) return false;
      if (p.version === 4) return v4.some((r) => p.value >= r.start && p.value <= r.end);
      const value = groupsToBigint(p.groups);
      return v6.some((r) => value >= r.start && value <= r.end);
    },
  };
}

/** `::ffff:1.2.3.4`, as Node reports an IPv4 peer on a dual-stack socket, is `1.2.3.4`. */
function unmapped(ip: string): string {
  return ip.toLowerCase().startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}

/**
 * The visitor's address. The socket's peer, unless that peer is a trusted proxy: then the
 * `X-Forwarded-For` chain is walked from the right — each hop appended the address it received the
 * request from — skipping trusted hops, and the first untrusted one is the client. Never the
 * leftmost entry (anyone can write it), never anything from the request body. A malformed entry
 * ends the walk: the hop that wrote it is trusted, so the address it received from is taken to be
 * the last trusted one we saw. Null when there is no usable address at all.
 */
export function clientAddress(socket: string | undefined, forwardedFor: string | undefined, trusted: TrustedProxies): string | null {
  if (!socket || !parseIp(unmapped(socket))) return null;
  let client = unmapped(socket);
  if (trusted.empty || !trusted.contains(client) || !forwardedFor) return client;
  const hops = forwardedFor.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = unmapped((hops[i] ?? '').trim().replace(/^\[(.*)\]$/, '$1'));
    if (!parseIp(hop)) return client;
    client = hop;
    if (!trusted.contains(hop)) return hop;
  }
  return client;
}
