import { Ipv4Index } from './ranges.ts';

/**
 * The country of every IPv4 address as a range table, read once at load out of the shipped country
 * MMDB's search tree, so an IPv4 lookup finds its country in the same search that finds its network
 * owner (see Ipv4Facts) instead of walking the MMDB tree and decoding a record per lookup.
 */
export interface CountryTable {
  /** Country codes; range values index them. */
  codes: string[];
  /** Addresses with no country (no record, or a record without one) lie in no range. */
  v4: Ipv4Index;
}

/** The parts of an MMDB file its search tree is read with: the file's bytes and its metadata. */
export interface MmdbTree {
  bytes: Uint8Array;
  nodeCount: number;
  /** Bits per record: 24, 28 or 32. */
  recordSize: number;
  /** 4 for an IPv4 tree; 6 for an IPv6 one, which holds IPv4 under ::/96. */
  ipVersion: number;
}

/**
 * Walks the IPv4 part of an MMDB search tree the way a reader looks an IPv4 address up (from the node
 * ninety-six left turns below the root in an IPv6 tree), and returns its leaves in address order:
 * `leaf(first, last, record)` with the record value a lookup in [first, last] ends on (nodeCount
 * when the tree has no data there).
 */
export function walkIpv4Tree(tree: MmdbTree, leaf: (first: number, last: number, record: number) => void): void {
  const { bytes: b, nodeCount, recordSize } = tree;
  if (recordSize !== 24 && recordSize !== 28 && recordSize !== 32) throw new Error(`unsupported MMDB record size ${recordSize}`);
  const nodeBytes = recordSize / 4;
  if (b.length < nodeCount * nodeBytes) throw new Error('MMDB search tree cut short');
  const record = (node: number, right: boolean): number => {
    const at = node * nodeBytes;
    if (recordSize === 24) {
      const o = right ? at + 3 : at;
      return ((b[o] as number) << 16) | ((b[o + 1] as number) << 8) | (b[o + 2] as number);
    }
    if (recordSize === 28) {
      const middle = b[at + 3] as number;
      const o = right ? at + 4 : at;
      const high = right ? middle & 0x0f : middle >>> 4;
      return high * 0x1000000 + (((b[o] as number) << 16) | ((b[o + 1] as number) << 8) | (b[o + 2] as number));
    }
    const o = right ? at + 4 : at;
    return (b[o] as number) * 0x1000000 + (((b[o + 1] as number) << 16) | ((b[o + 2] as number) << 8) | (b[o + 3] as number));
  };
  let start = 0;
  if (tree.ipVersion !== 4) for (let i = 0; i < 96 && start < nodeCount; i++) start = record(start, false);
  // Depth-first, left before right, so leaves come out in address order; an explicit stack (a
  // right turn waits at each level above the current node) rather than a million calls.
  const blockSize = Float64Array.from({ length: 33 }, (_, d) => 2 ** (32 - d));
  const stackNode = new Uint32Array(34);
  const stackDepth = new Uint8Array(34);
  const stackFirst = new Uint32Array(34);
  let top = 0;
  const push = (node: number, depth: number, first: number) => {
    stackNode[top] = node;
    stackDepth[top] = depth;
    stackFirst[top++] = first;
  };
  push(start, 0, 0);
  while (top > 0) {
    top--;
    const node = stackNode[top] as number;
    const depth = stackDepth[top] as number;
    const first = stackFirst[top] as number;
    if (node >= nodeCount || depth === 32) {
      // A reader that runs out of address bits on a node finds no data, as for nodeCount.
      leaf(first, first + (blockSize[depth] as number) - 1, Math.max(node, nodeCount));
      continue;
    }
    push(record(node, true), depth + 1, first + (blockSize[depth + 1] as number));
    push(record(node, false), depth + 1, first);
  }
}

/**
 * The IPv4 country table of a country MMDB. `countryAt(address)` is the reader's own answer for one
 * dotted-quad address; it is asked once per distinct record (a few hundred), at the first address
 * that ends on it, so each range holds exactly what the reader answers for every address in it.
 * Touching leaves with the same country are merged.
 */
export function countryTableFromMmdb(tree: MmdbTree, countryAt: (address: string) => string | null): CountryTable {
  const codes: string[] = [];
  const codeIndex = new Map<string, number>();
  const byRecord = new Map<number, number>(); // record value → code index, or -1 for no country
  const codeOf = (first: number, record: number): number => {
    if (record === tree.nodeCount) return -1;
    let code = byRecord.get(record);
    if (code === undefined) {
      const country = countryAt(`${first >>> 24}.${(first >>> 16) & 255}.${(first >>> 8) & 255}.${first & 255}`);
      if (country === null) code = -1;
      else {
        code = codeIndex.get(country);
        if (code === undefined) {
          code = codes.push(country) - 1;
          codeIndex.set(country, code);
        }
      }
      byRecord.set(record, code);
    }
    return code;
  };
  // One walk into arrays that grow as needed, copied once to their final size at the end.
  let starts = new Uint32Array(1 << 16);
  let ends = new Uint32Array(1 << 16);
  let values = new Int32Array(1 << 16);
  let n = 0;
  let lastEnd = -2;
  let lastCode = -1;
  let lastRecord = -1;
  let recordCode = -1;
  walkIpv4Tree(tree, (first, last, record) => {
    // Neighbouring leaves mostly share their record: ask the map only when it changes.
    if (record !== lastRecord) {
      recordCode = codeOf(first, record);
      lastRecord = record;
    }
    const code = recordCode;
    if (code < 0) return;
    if (code === lastCode && lastEnd + 1 === first) ends[n - 1] = last;
    else {
      if (n === starts.length) {
        const grow = <T extends Uint32Array | Int32Array>(a: T, make: (size: number) => T) => {
          const b = make(a.length * 2);
          b.set(a);
          return b;
        };
        starts = grow(starts, (size) => new Uint32Array(size));
        ends = grow(ends, (size) => new Uint32Array(size));
        values = grow(values, (size) => new Int32Array(size));
      }
      starts[n] = first;
      ends[n] = last;
      values[n++] = code;
    }
    lastEnd = last;
    lastCode = code;
  });
  return { codes, v4: Ipv4Index.fromSorted(starts.slice(0, n), ends.slice(0, n), values.slice(0, n), n) };
}
