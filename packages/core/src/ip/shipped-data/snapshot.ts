import type { AsnBase, RangeList, ShippedRanges } from '../local-data.ts';
import { Ipv4Index, Ipv6Index, LITTLE_ENDIAN } from '../ranges.ts';

/**
 * The shipped base data as one compact binary file, for deployments that cannot read the npm
 * package's CSVs or the range lists at start (Supabase Edge Functions ship it as a static file;
 * see packages/host/src/edge-data.ts). Gzipped it is about 3 MB where the CSVs are 33 MB, because
 * IPv4 ranges are stored as the gap from the previous range and a length, mostly small numbers.
 *
 * Layout, little-endian: the magic line, five uint32 words (IPv4 ranges, IPv6 ranges, owners,
 * bytes of names, flags), then each array at an 8-byte boundary: IPv4 gaps, lengths, owner
 * indexes; IPv6 start-high, start-low, end-high, end-low (uint64) and owner indexes; owners' ASNs;
 * owners' names as UTF-8 joined by newlines.
 *
 * Flag 1: the shipped range lists follow, from the next 8-byte boundary: four uint32 words (IPv4
 * segments, IPv6 segments, bytes of the lists, reserved 0), then the same seven arrays as above
 * with list indexes for owner indexes, then the lists as UTF-8 JSON. The flag word was 0 before
 * the lists existed, so a reader that predates them refuses such a file instead of misreading it.
 */
const MAGIC = new TextEncoder().encode('sightline-asn-v1\n');
const HEADER_WORDS = 5;
const RANGES_HEADER_WORDS = 4;
const FLAG_RANGES = 1;

type Typed = Uint32Array | Int32Array | BigUint64Array;

const align8 = (n: number) => (n + 7) & ~7;

/** The sorted, disjoint IPv4 segments as gaps from the previous segment and lengths. */
function gapsAndLengths(v4: ReturnType<Ipv4Index['arrays']>): [Uint32Array, Uint32Array] {
  const n = v4.values.length;
  const gaps = new Uint32Array(n);
  const lengths = new Uint32Array(n);
  let next = 0; // the first address after the previous range
  for (let i = 0; i < n; i++) {
    const start = v4.starts[i] as number;
    gaps[i] = start - next;
    lengths[i] = (v4.ends[i] as number) - start;
    next = (v4.ends[i] as number) + 1;
  }
  return [gaps, lengths];
}

/** Both indexes' arrays in snapshot order. */
function indexArrays(v4: Ipv4Index, v6: Ipv6Index): Typed[] {
  const six = v6.arrays();
  const four = v4.arrays();
  return [...gapsAndLengths(four), four.values, six.startHi, six.startLo, six.endHi, six.endLo, six.values];
}

export function encodeAsnSnapshot(base: AsnBase): Uint8Array {
  if (!LITTLE_ENDIAN) throw new Error('ASN snapshots are written on little-endian machines only');
  const n4 = base.asn4.size;
  for (const name of base.owners.names) if (name.includes('\n')) throw new Error(`an owner name holds a newline: ${JSON.stringify(name)}`);
  const names = new TextEncoder().encode(base.owners.names.join('\n'));
  const arrays: Typed[] = [...indexArrays(base.asn4, base.asn6), base.owners.asns];
  let size = align8(MAGIC.length + HEADER_WORDS * 4);
  for (const a of arrays) size = align8(size + a.byteLength);
  size += names.byteLength;

  const ranges = base.ranges;
  const lists = ranges ? new TextEncoder().encode(JSON.stringify(ranges.lists)) : new Uint8Array(0);
  const rangeArrays = ranges ? indexArrays(ranges.v4, ranges.v6) : [];
  const rangesAt = align8(size);
  if (ranges) {
    size = align8(rangesAt + RANGES_HEADER_WORDS * 4);
    for (const a of rangeArrays) size = align8(size + a.byteLength);
    size += lists.byteLength;
  }

  const out = new Uint8Array(size);
  out.set(MAGIC, 0);
  const header = new DataView(out.buffer, MAGIC.length, HEADER_WORDS * 4);
  for (const [i, v] of [n4, base.asn6.size, base.owners.asns.length, names.byteLength, ranges ? FLAG_RANGES : 0].entries())
    header.setUint32(i * 4, v, true);
  let at = align8(MAGIC.length + HEADER_WORDS * 4);
  const put = (a: Typed) => {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
    at = align8(at + a.byteLength);
  };
  for (const a of arrays) put(a);
  out.set(names, at);
  if (ranges) {
    const sub = new DataView(out.buffer, rangesAt, RANGES_HEADER_WORDS * 4);
    for (const [i, v] of [ranges.v4.size, ranges.v6.size, lists.byteLength, 0].entries()) sub.setUint32(i * 4, v, true);
    at = align8(rangesAt + RANGES_HEADER_WORDS * 4);
    for (const a of rangeArrays) put(a);
    out.set(lists, at);
  }
  return out;
}

/**
 * The files `npm run build:edge-data` writes for runtimes that cannot read the npm packages' data
 * (the Supabase Edge Functions ship them as static files), and their reader opens: the ASN snapshot
 * (this file's format, gzipped) and the country database (MaxMind DB, gzipped).
 */
export const EDGE_DATA_FILES = { asn: 'asn.bin.gz', country: 'country.mmdb.gz' } as const;

export function decodeAsnSnapshot(bytes: Uint8Array): AsnBase {
  if (!LITTLE_ENDIAN) throw new Error('ASN snapshots are read on little-endian machines only');
  const bad = (why: string) => new Error(`not a readable ASN snapshot: ${why}`);
  if (bytes.length < MAGIC.length + HEADER_WORDS * 4 || MAGIC.some((b, i) => bytes[i] !== b)) throw bad('wrong magic line');
  const header = new DataView(bytes.buffer, bytes.byteOffset + MAGIC.length, HEADER_WORDS * 4);
  const [n4, n6, nOwners, nameBytes, flags] = [0, 1, 2, 3, 4].map((i) => header.getUint32(i * 4, true)) as [number, number, number, number, number];
  if ((flags & ~FLAG_RANGES) !== 0) throw bad('unknown header flags');
  let at = align8(MAGIC.length + HEADER_WORDS * 4);
  // Copies into fresh arrays: the bytes may sit at any offset, and typed views need alignment. The
  // size is checked before anything is allocated, so a wrong count cannot ask for gigabytes.
  const take = <T extends Typed>(make: { new (n: number): T; BYTES_PER_ELEMENT: number }, n: number): T => {
    const size = n * make.BYTES_PER_ELEMENT;
    if (at + size > bytes.length) throw bad('cut short');
    const a = new make(n);
    new Uint8Array(a.buffer).set(bytes.subarray(at, at + size));
    at = align8(at + a.byteLength);
    return a;
  };
  /** An IPv4 and an IPv6 index whose values must lie in [0, valueCount). */
  const takeIndexes = (c4: number, c6: number, valueCount: number, what: string): { v4: Ipv4Index; v6: Ipv6Index } => {
    const gaps = take(Uint32Array, c4);
    const lengths = take(Uint32Array, c4);
    const values4 = take(Int32Array, c4);
    const startHi = take(BigUint64Array, c6);
    const startLo = take(BigUint64Array, c6);
    const endHi = take(BigUint64Array, c6);
    const endLo = take(BigUint64Array, c6);
    const values6 = take(Int32Array, c6);
    // Back from gaps and lengths, in place: starts overwrite gaps, ends overwrite lengths.
    let next = 0;
    for (let i = 0; i < c4; i++) {
      const start = next + (gaps[i] as number);
      const end = start + (lengths[i] as number);
      if (end > 0xffffffff) throw bad('an IPv4 range runs past the address space');
      gaps[i] = start;
      lengths[i] = end;
      next = end + 1;
    }
    for (const v of [values4, values6]) for (const value of v) if (value < 0 || value >= valueCount) throw bad(`a range names an unknown ${what}`);
    // IPv4 order follows from the encoding; IPv6 ranges are stored as they are, so check them.
    for (let i = 0; i < c6; i++) {
      const sh = startHi[i] as bigint;
      const sl = startLo[i] as bigint;
      const eh = endHi[i] as bigint;
      if (sh > eh || (sh === eh && sl > (endLo[i] as bigint))) throw bad('an IPv6 range ends before it starts');
      if (i > 0) {
        const ph = endHi[i - 1] as bigint;
        if (ph > sh || (ph === sh && (endLo[i - 1] as bigint) >= sl)) throw bad('IPv6 ranges out of order or overlapping');
      }
    }
    return { v4: Ipv4Index.fromSorted(gaps, lengths, values4, c4), v6: Ipv6Index.fromArrays({ startHi, startLo, endHi, endLo, values: values6 }) };
  };

  const owned = takeIndexes(n4, n6, nOwners, 'owner');
  const asns = take(Int32Array, nOwners);
  if (at + nameBytes > bytes.length) throw bad('cut short');
  const names = nOwners ? new TextDecoder().decode(bytes.subarray(at, at + nameBytes)).split('\n') : [];
  if (names.length !== nOwners) throw bad('owner names do not match the owners');
  at += nameBytes;
  const base: AsnBase = { owners: { asns, names }, asn4: owned.v4, asn6: owned.v6 };
  if (flags & FLAG_RANGES) {
    at = align8(at);
    if (at + RANGES_HEADER_WORDS * 4 > bytes.length) throw bad('cut short');
    const sub = new DataView(bytes.buffer, bytes.byteOffset + at, RANGES_HEADER_WORDS * 4);
    const [r4, r6, listBytes, reservedWord] = [0, 1, 2, 3].map((i) => sub.getUint32(i * 4, true)) as [number, number, number, number];
    if (reservedWord !== 0) throw bad('unknown range-list flags');
    at = align8(at + RANGES_HEADER_WORDS * 4);
    // The lists are read after the indexes, so their count is checked against them below.
    const start = at;
    let sized = start;
    for (const [n, width] of [
      [r4, 4],
      [r4, 4],
      [r4, 4],
      [r6, 8],
      [r6, 8],
      [r6, 8],
      [r6, 8],
      [r6, 4],
    ] as const)
      sized = align8(sized + n * width);
    if (sized + listBytes > bytes.length) throw bad('cut short');
    const lists = rangeListsFrom(new TextDecoder().decode(bytes.subarray(sized, sized + listBytes)), bad);
    const shipped = takeIndexes(r4, r6, lists.length, 'range list');
    at += listBytes;
    base.ranges = { lists, ...shipped } satisfies ShippedRanges;
  }
  if (at !== bytes.length) throw bad('wrong length');
  return base;
}

/** The range lists' JSON, checked field by field: it decides answers, so nothing unknown passes. */
function rangeListsFrom(text: string, bad: (why: string) => Error): RangeList[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw bad('the range lists are not JSON');
  }
  if (!Array.isArray(parsed)) throw bad('the range lists are not a list');
  return parsed.map((item: unknown): RangeList => {
    const o = (item && typeof item === 'object' ? item : {}) as Record<string, unknown>;
    const { id, kind, provider, reason } = o;
    if (
      typeof id !== 'string' ||
      (kind !== 'vpn' && kind !== 'hosting') ||
      (provider !== null && typeof provider !== 'string') ||
      typeof reason !== 'string'
    ) {
      throw bad('a range list is malformed');
    }
    return { id, kind, provider, reason };
  });
}

/** Gunzips with the web-standard DecompressionStream, which Node 18+ and Deno both have. */
export async function gunzip(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
