/**
 * Strict IP parsing and the address classes we refuse to call (SSRF guard). The parsers here are
 * hand-rolled because they sit on the hot path (every lookup request, provider answers); cold
 * paths where a wrong parse is costly — webhook destinations, import files — use `ip-address`.
 * tests/ip-parse-reference.test.ts holds both to the same answers, and lists where they differ on
 * purpose (zone ids).
 */

/**
 * Canonical dotted-quad IPv4 → 32-bit unsigned number, or null. Leading zeros are refused, as
 * ip-address refuses them: `010.0.0.1` is 8.0.0.1 to inet_aton and 10.0.0.1 to others.
 */
export function parseIPv4(s: string): number | null {
  const n = ipv4ToNumber(s);
  return n < 0 ? null : n;
}

/**
 * Canonical dotted-quad → number, or -1 (no leading zeros, no spaces, nothing else). The first step
 * of every lookup (request validation, LocalIpData.facts), so it reads each octet's up-to-three digits at
 * once and works out the octet's length and value with arithmetic masks: a per-character loop
 * mispredicts the branch at nearly every dot of random addresses, which cost more than the parsing
 * itself.
 */
export function ipv4ToNumber(s: string): number {
  const len = s.length;
  if (len < 7 || len > 15) return -1;
  let value = 0;
  let i = 0;
  let bad = 0;
  for (let k = 0; k < 4; k++) {
    const d0 = s.charCodeAt(i) - 48;
    // Past the end reads as '.', which ends the octet like a dot does.
    const d1 = (i + 1 < len ? s.charCodeAt(i + 1) : 46) - 48;
    const d2 = (i + 2 < len ? s.charCodeAt(i + 2) : 46) - 48;
    const second = (~d1 >>> 31) & (d1 < 10 ? 1 : 0); // 1 when d1 is a digit
    const third = second & (~d2 >>> 31) & (d2 < 10 ? 1 : 0);
    let octet = d0 * (1 + 9 * second) + d1 * second;
    octet = octet * (1 + 9 * third) + d2 * third;
    bad |= (d0 >>> 0 > 9 ? 1 : 0) | (octet > 255 ? 1 : 0) | ((d0 === 0 ? 1 : 0) & second);
    value = (value << 8) | octet;
    i += 1 + second + third;
    if (k < 3) bad |= s.charCodeAt(i++) !== 46 ? 1 : 0;
  }
  return bad || i !== len ? -1 : value >>> 0;
}

/**
 * IPv6 text → eight 16-bit groups, or null. Accepts `::` and an IPv4 tail. Refuses zone ids
 * (`fe80::1%eth0`), which ip-address accepts: a zone names an interface of the machine that reads
 * it, so it means nothing in a lookup request, and Postgres `inet` would refuse it anyway.
 */
export function parseIPv6(s: string): number[] | null {
  if (s.length < 2 || s.length > 45 || s.includes('%')) return null;
  let text = s;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    // An IPv4 tail (`::ffff:1.2.3.4`) is rewritten as its two hex groups.
    const tail = parseIPv4(text.slice(lastColon + 1));
    if (tail === null) return null;
    text = `${text.slice(0, lastColon + 1)}${(tail >>> 16).toString(16)}:${(tail & 0xffff).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string): number[] | null => {
    if (part === '') return [];
    const groups = part.split(':');
    const out: number[] = [];
    for (const g of groups) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = parse(halves[0] ?? '');
  if (!head) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const rest = parse(halves[1] ?? '');
  if (!rest) return null;
  const fill = 8 - head.length - rest.length;
  if (fill < 1) return null;
  return [...head, ...new Array<number>(fill).fill(0), ...rest];
}

export type ParsedIp = { version: 4; value: number } | { version: 6; groups: number[] };

export function parseIp(s: string): ParsedIp | null {
  const v4 = parseIPv4(s);
  if (v4 !== null) return { version: 4, value: v4 };
  const v6 = parseIPv6(s);
  if (v6 !== null) return { version: 6, groups: v6 };
  return null;
}

/**
 * The key one client is counted under by a per-address limit: an IPv4 address as written, or the
 * /64 of an IPv6 one (a subscriber is given a /64 or more, so single IPv6 addresses would let one
 * client step through 2^64 keys). Null for text that is not an address.
 */
export function clientLimitKey(ip: string): string | null {
  const parsed = parseIp(ip);
  if (!parsed) return null;
  if (parsed.version === 4) return ip;
  return `${parsed.groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

const v4 = (a: number, b: number, c: number, d: number) => ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;

/** IPv4 ranges that are not globally routable unicast destinations. */
const FORBIDDEN_V4: ReadonlyArray<readonly [number, number, string]> = [
  [v4(0, 0, 0, 0), 8, 'this network'],
  [v4(10, 0, 0, 0), 8, 'private'],
  [v4(100, 64, 0, 0), 10, 'carrier-grade NAT'],
  [v4(127, 0, 0, 0), 8, 'loopback'],
  [v4(169, 254, 0, 0), 16, 'link-local / cloud metadata'],
  [v4(172, 16, 0, 0), 12, 'private'],
  [v4(192, 0, 0, 0), 24, 'IETF protocol assignments'],
  [v4(192, 0, 2, 0), 24, 'documentation'],
  [v4(192, 88, 99, 0), 24, '6to4 relay anycast'],
  [v4(192, 168, 0, 0), 16, 'private'],
  [v4(198, 18, 0, 0), 15, 'benchmarking'],
  [v4(198, 51, 100, 0), 24, 'documentation'],
  [v4(203, 0, 113, 0), 24, 'documentation'],
  [v4(224, 0, 0, 0), 4, 'multicast'],
  [v4(240, 0, 0, 0), 4, 'reserved'],
];

/** Which private/loopback-style class an IPv4 belongs to, or null if it is public. */
export function forbiddenIPv4Class(value: number): string | null {
  for (const [base, bits, label] of FORBIDDEN_V4) {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    if ((value & mask) >>> 0 === base) return label;
  }
  return null;
}

/** Loopback and private ranges a developer may allow for local receivers. */
const LOCAL_DEV_CLASSES = new Set(['loopback', 'private', 'IPv6 loopback', 'IPv6 unique local']);

/**
 * Classifies an IPv6 address. Forms that embed an IPv4 address (mapped, compatible, NAT64,
 * 6to4, Teredo) are judged by the embedded address too, so `::ffff:127.0.0.1` is loopback.
 */
export function forbiddenIPv6Class(g: number[]): string | null {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, , g5 = 0, g6 = 0, g7 = 0] = g;
  const embedded = (hi: number, lo: number) => ((hi << 16) >>> 0) + lo;
  const allZeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (allZeroTo(8)) return 'unspecified';
  if (allZeroTo(7) && g7 === 1) return 'IPv6 loopback';
  if (allZeroTo(5) && g5 === 0xffff) return forbiddenIPv4Class(embedded(g6, g7)) ?? null;
  if (allZeroTo(6)) return 'IPv4-compatible (deprecated)';
  if (g0 === 0x64 && g1 === 0xff9b) {
    // NAT64: 64:ff9b::/96 carries an IPv4 address; 64:ff9b:1::/48 is local-use.
    if (g2 === 1) return 'NAT64 local-use';
    return forbiddenIPv4Class(embedded(g6, g7)) ?? null;
  }
  if (g0 === 0x2002) return forbiddenIPv4Class(embedded(g1, g2)) ?? null; // 6to4
  if (g0 === 0x2001 && g1 === 0) {
    // Teredo: the client address is the last 32 bits, inverted.
    const client = (embedded(g6, g7) ^ 0xffffffff) >>> 0;
    return forbiddenIPv4Class(client) ?? 'Teredo';
  }
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return 'discard-only';
  if (g0 === 0x2001 && g1 === 0xdb8) return 'documentation';
  if (g0 === 0x2001 && g1 < 0x200) return 'IETF protocol assignments';
  if ((g0 & 0xfe00) === 0xfc00) return 'IPv6 unique local';
  if ((g0 & 0xffc0) === 0xfe80) return 'IPv6 link-local';
  if ((g0 & 0xffc0) === 0xfec0) return 'IPv6 site-local (deprecated)';
  if ((g0 & 0xff00) === 0xff00) return 'IPv6 multicast';
  return null;
}

export function forbiddenAddressClass(ip: ParsedIp): string | null {
  return ip.version === 4 ? forbiddenIPv4Class(ip.value) : forbiddenIPv6Class(ip.groups);
}

/** Whether a forbidden class is one that ALLOW_PRIVATE_WEBHOOKS=1 lets through. */
export function isLocalDevClass(label: string): boolean {
  return LOCAL_DEV_CLASSES.has(label);
}

export function groupsToBigint(groups: number[]): bigint {
  let v = 0n;
  for (const g of groups) v = (v << 16n) | BigInt(g);
  return v;
}

/** CIDR text → inclusive numeric range; null if malformed. */
export function parseCidr(text: string): { version: 4; start: number; end: number } | { version: 6; start: bigint; end: bigint } | null {
  const [addr, bitsText, extra] = text.trim().split('/');
  if (!addr || extra !== undefined) return null;
  if (addr.includes(':')) {
    const groups = parseIPv6(addr);
    if (!groups) return null;
    const bits = bitsText === undefined ? 128 : Number(bitsText);
    if (!Number.isInteger(bits) || bits < 0 || bits > 128 || (bitsText !== undefined && !/^\d{1,3}$/.test(bitsText))) return null;
    const host = (1n << BigInt(128 - bits)) - 1n;
    const start = groupsToBigint(groups) & ~host & ((1n << 128n) - 1n);
    return { version: 6, start, end: start | host };
  }
  const v = ipv4ToNumber(addr);
  if (v < 0) return null;
  const bits = bitsText === undefined ? 32 : Number(bitsText);
  if (!Number.isInteger(bits) || bits < 0 || bits > 32 || (bitsText !== undefined && !/^\d{1,2}$/.test(bitsText))) return null;
  const size = 2 ** (32 - bits);
  const start = Math.floor(v / size) * size;
  return { version: 4, start, end: start + size - 1 };
}
