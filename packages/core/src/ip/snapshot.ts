import type { AsnBase } from './local-data.ts';
import { Ipv4Index, Ipv6Index, LITTLE_ENDIAN } from './ranges.ts';

/**
 * The network-owner data as one compact binary file, for deployments that cannot read the npm
 * package's CSVs at start (Supabase Edge Functions ship it as a static file; see
 * packages/host/src/edge-data.ts). Gzipped it is about 3 MB where the CSVs are 33 MB, because IPv4
 * ranges are stored as the gap from the previous range and a length, mostly small numbers.
 *
 * Layout, little-endian: the magic line, five uint32 counts (IPv4 ranges, IPv6 ranges, owners,
 * bytes of names, reserved 0), then each array at an 8-byte boundary: IPv4 gaps, lengths, owner
 * indexes; IPv6 start-high, start-low, end-high, end-low (uint64) and owner indexes; owners' ASNs;
 * owners' names as UTF-8 joined by newlines.
 */
const MAGIC = new TextEncoder().encode('sightline-asn-v1\n');
const HEADER_WORDS = 5;

type Typed = Uint32Array | Int32Array | BigUint64Array;

const align8 = (n: number) => (n + 7) & ~7;

export function encodeAsnSnapshot(base: AsnBase): Uint8Array {
  if (!LITTLE_ENDIAN) throw new Error('ASN snapshots are written on little-endian machines only');
  const v4 = base.asn4.arrays();
  const v6 = base.asn6.arrays();
  const n4 = v4.values.length;
  const gaps = new Uint32Array(n4);
  const lengths = new Uint32Array(n4);
  let next = 0; // the first address after the previous range
  for (let i = 0; i < n4; i++) {
    const start = v4.starts[i] as number;
    gaps[i] = start - next;
    lengths[i] = (v4.ends[i] as number) - start;
    next = (v4.ends[i] as number) + 1;
  }
  for (const name of base.owners.names) if (name.includes('\n')) throw new Error(`an owner name holds a newline: ${JSON.stringify(name)}`);
  const names = new TextEncoder().encode(base.owners.names.join('\n'));
  const arrays: Typed[] = [gaps, lengths, v4.values, v6.startHi, v6.startLo, v6.endHi, v6.endLo, v6.values, base.owners.asns];
  let size = align8(MAGIC.length + HEADER_WORDS * 4);
  for (const a of arrays) size = align8(size + a.byteLength);
  size += names.byteLength;

  const out = new Uint8Array(size);
  out.set(MAGIC, 0);
  const header = new DataView(out.buffer, MAGIC.length, HEADER_WORDS * 4);
  [n4, v6.values.length, base.owners.asns.length, names.byteLength, 0].forEach((v, i) => header.setUint32(i * 4, v, true));
  let at = align8(MAGIC.length + HEADER_WORDS * 4);
  for (const a of arrays) {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
    at = align8(at + a.byteLength);
  }
  out.set(names, at);
  return out;
}

export function decodeAsnSnapshot(bytes: Uint8Array): AsnBase {
  if (!LITTLE_ENDIAN) throw new Error('ASN snapshots are read on little-endian machines only');
  const bad = (why: string) => new Error(`not a readable ASN snapshot: ${why}`);
  if (bytes.length < MAGIC.length + HEADER_WORDS * 4 || MAGIC.some((b, i) => bytes[i] !== b)) throw bad('wrong magic line');
  const header = new DataView(bytes.buffer, bytes.byteOffset + MAGIC.length, HEADER_WORDS * 4);
  const [n4, n6, nOwners, nameBytes, reserved] = [0, 1, 2, 3, 4].map((i) => header.getUint32(i * 4, true)) as [number, number, number, number, number];
  if (reserved !== 0) throw bad('unknown header flags');
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
  const gaps = take(Uint32Array, n4);
  const lengths = take(Uint32Array, n4);
  const values4 = take(Int32Array, n4);
  const startHi = take(BigUint64Array, n6);
  const startLo = take(BigUint64Array, n6);
  const endHi = take(BigUint64Array, n6);
  const endLo = take(BigUint64Array, n6);
  const values6 = take(Int32Array, n6);
  const asns = take(Int32Array, nOwners);
  if (at + nameBytes !== bytes.length) throw bad('wrong length');
  const names = nOwners ? new TextDecoder().decode(bytes.subarray(at, at + nameBytes)).split('\n') : [];
  if (names.length !== nOwners) throw bad('owner names do not match the owners');

  // Back from gaps and lengths, in place: starts overwrite gaps, ends overwrite lengths.
  let next = 0;
  for (let i = 0; i < n4; i++) {
    const start = next + (gaps[i] as number);
    const end = start + (lengths[i] as number);
    if (end > 0xffffffff) throw bad('an IPv4 range runs past the address space');
    gaps[i] = start;
    lengths[i] = end;
    next = end + 1;
  }
  for (const v of [values4, values6]) for (const owner of v) if (owner < 0 || owner >= nOwners) throw bad('a range names an unknown owner');
  // IPv4 order follows from the encoding; IPv6 ranges are stored as they are, so check them.
  for (let i = 0; i < n6; i++) {
    const sh = startHi[i] as bigint;
    const sl = startLo[i] as bigint;
    const eh = endHi[i] as bigint;
    if (sh > eh || (sh === eh && sl > (endLo[i] as bigint))) throw bad('an IPv6 range ends before it starts');
    if (i > 0) {
      const ph = endHi[i - 1] as bigint;
      if (ph > sh || (ph === sh && (endLo[i - 1] as bigint) >= sl)) throw bad('IPv6 ranges out of order or overlapping');
    }
  }
  return {
    owners: { asns, names },
    asn4: Ipv4Index.fromSorted(gaps, lengths, values4, n4),
    asn6: Ipv6Index.fromArrays({ startHi, startLo, endHi, endLo, values: values6 }),
  };
}

/** Gunzips with the web-standard DecompressionStream, which Node 18+ and Deno both have. */
export async function gunzip(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
