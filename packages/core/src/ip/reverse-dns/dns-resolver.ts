import { type ParsedIp, parseIp } from '../../kernel/net/ip.ts';

/** The forward record types a PTR name is confirmed with: A for an IPv4 address, AAAA for IPv6. */
export type AddressRecordType = 'A' | 'AAAA';

/**
 * The host's DNS, injected into core (Node's `node:dns` Resolver, Deno's `Deno.resolveDns`).
 *
 * Both calls resolve to an empty list when DNS answers that there is nothing (NXDOMAIN, or the
 * name exists without records of that type): that is an answer, and it is cached as one. They
 * reject on anything that is not an answer (timeout, SERVFAIL, refused, an unreachable server),
 * which is cached as a failure for a shorter time. Both stop work when `signal` aborts.
 */
export interface DnsResolver {
  /** The PTR names of `ip` (as DNS returns them; core lower-cases them and drops a trailing dot). */
  reverse(ip: string, signal: AbortSignal): Promise<string[]>;
  /** The addresses `name` has of `type`, as text. */
  resolve(name: string, type: AddressRecordType, signal: AbortSignal): Promise<string[]>;
}

/**
 * An address as the reverse lookup sees it: an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, what
 * a dual-stack socket reports for an IPv4 client) is its IPv4 address, whose PTR lives in
 * in-addr.arpa. Null for text that is not an address.
 */
export function lookupAddress(ip: string): ParsedIp | null {
  const parsed = parseIp(ip.trim());
  if (!parsed || parsed.version === 4) return parsed;
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = parsed.groups;
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) {
    return { version: 4, value: ((g6 << 16) >>> 0) + g7 };
  }
  return parsed;
}

/** The canonical text of a parsed address: dotted quad, or RFC 5952's compressed lower-case IPv6. */
export function formatAddress(ip: ParsedIp): string {
  if (ip.version === 4) return [ip.value >>> 24, (ip.value >>> 16) & 255, (ip.value >>> 8) & 255, ip.value & 255].join('.');
  // RFC 5952: the longest run of two or more zero groups (the first of equal runs) becomes `::`.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (ip.groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && ip.groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = ip.groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** Two parsed addresses are the same address (so `2001:DB8::0:10` is `2001:db8::10`). */
export function sameAddress(a: ParsedIp, b: ParsedIp): boolean {
  if (a.version === 4) return b.version === 4 && a.value === b.value;
  return b.version === 6 && a.groups.every((g, i) => g === b.groups[i]);
}

/**
 * The name a PTR query asks for (RFC 1035 §3.5, RFC 3596 §2.5): the octets reversed under
 * in-addr.arpa, or the 32 nibbles reversed under ip6.arpa. For resolvers that take a query name
 * rather than an address (Deno's), and for the test DNS server.
 */
export function reverseLookupName(ip: ParsedIp): string {
  if (ip.version === 4) {
    return `${ip.value & 255}.${(ip.value >>> 8) & 255}.${(ip.value >>> 16) & 255}.${ip.value >>> 24}.in-addr.arpa`;
  }
  const nibbles: string[] = [];
  for (const g of ip.groups) for (let shift = 12; shift >= 0; shift -= 4) nibbles.push(((g >> shift) & 15).toString(16));
  return `${nibbles.reverse().join('.')}.ip6.arpa`;
}
