import { forbiddenAddressClass, groupsToBigint, parseIp } from '../../kernel/net/ip.ts';

/**
 * Addresses as RDAP's caches compare them: one bigint per address, both families, so a registered
 * range (`startAddress`–`endAddress`, which need not be a CIDR) is two numbers and containment is
 * two comparisons.
 */
export interface RdapAddress {
  version: 4 | 6;
  value: bigint;
  /** The address as the caller wrote it (already validated): what goes into the query URL. */
  text: string;
}

export interface AddressRange {
  version: 4 | 6;
  start: bigint;
  end: bigint;
}

const BITS = { 4: 32, 6: 128 } as const;

/** A public unicast address, or null: private, reserved and malformed addresses are never sent to a registry. */
export function publicAddress(text: string): RdapAddress | null {
  const parsed = parseIp(text);
  if (!parsed || forbiddenAddressClass(parsed) !== null) return null;
  return parsed.version === 4 ? { version: 4, value: BigInt(parsed.value), text } : { version: 6, value: groupsToBigint(parsed.groups), text };
}

/** Any address of either family as a number (the ends of a registered range), or null. */
export function addressValue(text: string): { version: 4 | 6; value: bigint } | null {
  const parsed = parseIp(text);
  if (!parsed) return null;
  return parsed.version === 4 ? { version: 4, value: BigInt(parsed.value) } : { version: 6, value: groupsToBigint(parsed.groups) };
}

/**
 * The block of `bits` leading bits around an address: the unit the in-flight requests are shared
 * by and the most a registration that may hold smaller ones is trusted for (create-rdap-source.ts).
 */
export function blockOf(address: RdapAddress, bits: number): AddressRange {
  const width = BigInt(BITS[address.version] - bits);
  const host = (1n << width) - 1n;
  const start = address.value & ~host;
  return { version: address.version, start, end: start | host };
}

export function rangeKey(range: AddressRange): string {
  return `${range.version}:${range.start.toString(16)}`;
}

export function contains(range: AddressRange, address: { version: 4 | 6; value: bigint }): boolean {
  return range.version === address.version && range.start <= address.value && address.value <= range.end;
}

/** The overlap of two ranges of one family, or null. */
export function intersect(a: AddressRange, b: AddressRange): AddressRange | null {
  if (a.version !== b.version) return null;
  // Bigints: Math.max and Math.min take numbers only.
  let start = a.start;
  if (b.start > start) start = b.start;
  let end = a.end;
  if (b.end < end) end = b.end;
  return start <= end ? { version: a.version, start, end } : null;
}

/** An address as text: dotted quad, or IPv6 with the longest run of zero groups compressed (RFC 5952). */
export function formatAddress(version: 4 | 6, value: bigint): string {
  if (version === 4) {
    const n = Number(value);
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  }
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestAt < 0) return hex.join(':');
  return `${hex.slice(0, bestAt).join(':')}::${hex.slice(bestAt + bestLen).join(':')}`;
}

/** `203.0.113.0/26` when the range is one CIDR block, else `start - end`: how a reason names a registration. */
export function formatRange(range: AddressRange): string {
  const size = range.end - range.start + 1n;
  const isPowerOfTwo = (size & (size - 1n)) === 0n;
  if (isPowerOfTwo && (range.start & (size - 1n)) === 0n) {
    const hostBits = size.toString(2).length - 1;
    return `${formatAddress(range.version, range.start)}/${BITS[range.version] - hostBits}`;
  }
  return `${formatAddress(range.version, range.start)} - ${formatAddress(range.version, range.end)}`;
}
