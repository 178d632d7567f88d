import { parseCidr } from '../../kernel/net/ip.ts';
import type { RangeList, ShippedRanges } from '../local-data.ts';
import { Ipv4Index, Ipv6Index } from '../ranges.ts';

/**
 * The shipped VPN and hosting range lists (packages/core/data/ip-ranges/: the manifest lists.json
 * and the files it names), parsed into one index per address family. Runtime-free: the host reads
 * the files (`RangeListFiles`) and this parses them, so every host reads them alike.
 */

/** One entry of packages/core/data/ip-ranges/lists.json. */
export interface RangeListEntry extends RangeList {
  /** Paths inside the data folder, one CIDR (or address) per line. */
  files: string[];
  why: string;
}

/** Where the manifest and the files it names are read from. */
export interface RangeListFiles {
  /** The manifest's name, for errors. */
  manifestName: string;
  manifest(): Promise<string>;
  /** A file the manifest names, by its path inside the data folder. */
  read(path: string): Promise<Uint8Array>;
}

/**
 * The manifest's text (lists.json), checked: it decides answers, so a malformed entry stops the
 * start. `where` names the file in errors.
 */
export function rangeManifestFrom(text: string, where: string): RangeListEntry[] {
  const doc = JSON.parse(text) as { lists?: unknown };
  if (!Array.isArray(doc.lists)) throw new Error(`${where}: no "lists" array`);
  const ids = new Set<string>();
  return doc.lists.map((item: unknown, i): RangeListEntry => {
    const o = (item && typeof item === 'object' ? item : {}) as Record<string, unknown>;
    const { id, kind, provider, reason, files, why } = o;
    // Paths stay inside the data folder.
    const paths = (Array.isArray(files) ? (files as unknown[]) : []).filter(
      (f): f is string => typeof f === 'string' && !f.startsWith('/') && !f.split('/').includes('..'),
    );
    const ok =
      typeof id === 'string' &&
      !ids.has(id) &&
      (kind === 'vpn' || kind === 'hosting') &&
      (provider === null || (typeof provider === 'string' && provider.length > 0)) &&
      typeof reason === 'string' &&
      Array.isArray(files) &&
      paths.length > 0 &&
      paths.length === files.length &&
      typeof why === 'string';
    if (!ok) throw new Error(`${where}: list ${i} is malformed or repeats an id`);
    ids.add(id);
    return { id, kind, provider, reason, files: paths, why };
  });
}

/**
 * Reads the shipped range lists the manifest names. A line that is not a CIDR is skipped (the
 * shipped copy has none, which tests/ip-shipped-ranges.test.ts checks; a refreshed upstream file
 * with a stray line must not stop the server).
 */
export async function parseShippedRanges(files: RangeListFiles): Promise<ShippedRanges> {
  const manifest = rangeManifestFrom(await files.manifest(), files.manifestName);
  const lists = await Promise.all(
    manifest.map(async (entry) => ({
      list: { id: entry.id, kind: entry.kind, provider: entry.provider, reason: entry.reason },
      files: await Promise.all(entry.files.map((f) => files.read(f))),
    })),
  );
  const { lists: loaded, v4, v6 } = shippedRangesFrom(lists);
  return { lists: loaded, v4, v6 };
}

/**
 * CIDRs of one address family, `words` 32-bit words per bound (most significant first), in typed
 * arrays sized from a count of the lines beforehand: 80,000 rows make no object each, and no array
 * is outgrown and thrown away.
 */
class CidrRows {
  n = 0;
  starts: Uint32Array;
  ends: Uint32Array;
  /** The list each row came from (its index in the manifest). */
  lists: Uint16Array;
  /** The prefix length: more is more specific. */
  prefixes: Uint8Array;

  constructor(
    readonly words: 1 | 4,
    capacity: number,
  ) {
    this.starts = new Uint32Array(capacity * words);
    this.ends = new Uint32Array(capacity * words);
    this.lists = new Uint16Array(capacity);
    this.prefixes = new Uint8Array(capacity);
  }

  /** Room for one more row; returns its index. Grows only if the count was short. */
  next(): number {
    if (this.n === this.lists.length) {
      const size = Math.max(16, this.lists.length * 2);
      const grow = <T extends Uint32Array | Uint16Array | Uint8Array>(a: T, make: (n: number) => T, per: number) => {
        const b = make(size * per);
        b.set(a);
        return b;
      };
      this.starts = grow(this.starts, (n) => new Uint32Array(n), this.words);
      this.ends = grow(this.ends, (n) => new Uint32Array(n), this.words);
      this.lists = grow(this.lists, (n) => new Uint16Array(n), 1);
      this.prefixes = grow(this.prefixes, (n) => new Uint8Array(n), 1);
    }
    return this.n++;
  }
}

/** Lines in a file, and those with a colon (IPv6) among them: the rows' sizes, in one pass. */
function countLines(buf: Uint8Array): { lines: number; six: number } {
  let lines = 0;
  let six = 0;
  let colon = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i] as number;
    if (c === 58) colon = true;
    else if (c === 10) {
      lines++;
      if (colon) six++;
      colon = false;
    }
  }
  return { lines: lines + 1, six: six + (colon ? 1 : 0) };
}

/**
 * `a.b.c.d` or `a.b.c.d/n` in canonical form (no leading zeros): its first and last address into
 * `into` and its prefix length returned; -1 for anything else, which parseCidr then decides. The
 * common case, read without making a string, and in 32-bit integer arithmetic: doubles made per
 * row (as `2 ** bits` would make) grew the young generation by megabytes, which a process keeps.
 */
function canonicalV4At(buf: Uint8Array, from: number, to: number, into: Uint32Array): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  let i = from;
  for (; i < to; i++) {
    const c = buf[i] as number;
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = (value << 8) | octet;
      octet = 0;
      digits = 0;
      dots++;
    } else if (c === 47) break;
    else {
      const d = c - 48;
      if (d < 0 || d > 9 || (digits === 1 && octet === 0)) return -1;
      octet = octet * 10 + d;
      if (++digits > 3 || octet > 255) return -1;
    }
  }
  if (dots !== 3 || digits === 0) return -1;
  value = (value << 8) | octet;
  let prefix = 32;
  if (i < to) {
    const bits = to - i - 1;
    if (bits < 1 || bits > 2) return -1;
    prefix = 0;
    for (let k = i + 1; k < to; k++) {
      const d = (buf[k] as number) - 48;
      if (d < 0 || d > 9) return -1;
      prefix = prefix * 10 + d;
    }
    if (prefix > 32 || (bits === 2 && buf[i + 1] === 48)) return -1;
  }
  // The host bits; `>>> 32` would shift by nothing, so a /0 is its own case.
  const host = prefix === 0 ? -1 : ~(-1 << (32 - prefix));
  into[0] = value & ~host;
  into[1] = value | host;
  return prefix;
}

/** The value of a hex digit, or -1. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const lower = c | 32;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/**
 * Hex groups with at most one `::`, and an optional `/n` (no leading zero), into eight 16-bit
 * `groups` and the prefix length; false for anything else (an IPv4 tail, say), which parseCidr then
 * decides. Accepts only what parseCidr accepts, so the two read every line alike.
 */
function plainV6At(buf: Uint8Array, from: number, to: number, groups: Uint16Array, into: { prefix: number }): boolean {
  let slash = to;
  for (let i = from; i < to; i++) if (buf[i] === 47) slash = i;
  let n = 0; // groups read
  let gap = -1; // where `::` stood, in groups
  let i = from;
  if (slash - from >= 2 && buf[from] === 58 && buf[from + 1] === 58) {
    gap = 0;
    i = from + 2;
  }
  while (i < slash) {
    let value = 0;
    let digits = 0;
    for (; i < slash && digits <= 4; i++) {
      const d = hexDigit(buf[i] as number);
      if (d < 0) break;
      value = value * 16 + d;
      digits++;
    }
    if (digits === 0 || digits > 4 || n === 8) return false;
    groups[n++] = value;
    if (i === slash) break;
    if (buf[i] !== 58) return false;
    i++;
    if (buf[i] === 58) {
      if (gap >= 0) return false;
      gap = n;
      i++;
    } else if (i === slash) return false;
  }
  if (gap < 0 ? n !== 8 : n > 7) return false;
  if (gap >= 0) {
    // Move the groups after `::` to the end and zero the gap.
    const tail = n - gap;
    for (let k = 1; k <= tail; k++) groups[8 - k] = groups[n - k] as number;
    for (let k = gap; k < 8 - tail; k++) groups[k] = 0;
  }
  let prefix = 128;
  if (slash < to) {
    const digits = to - slash - 1;
    if (digits < 1 || digits > 3 || (digits > 1 && buf[slash + 1] === 48)) return false;
    prefix = 0;
    for (let k = slash + 1; k < to; k++) {
      const d = (buf[k] as number) - 48;
      if (d < 0 || d > 9) return false;
      prefix = prefix * 10 + d;
    }
    if (prefix > 128) return false;
  }
  into.prefix = prefix;
  return true;
}

const isSpace = (c: number) => c === 32 || c === 9 || c === 13;

/**
 * Adds every CIDR of one file to `four` or `six`; returns how many lines were not CIDRs. Lines are
 * read as `parseCidrList` reads them (`#` comments and blanks skipped, host bits masked), so the
 * shipped copy and the same file run through `import-ranges` agree.
 */
function addCidrs(buf: Uint8Array, list: number, four: CidrRows, six: CidrRows): number {
  let rejected = 0;
  const v4 = new Uint32Array(2);
  const v6 = { prefix: 0 };
  const groups = new Uint16Array(8);
  for (let pos = 0; pos < buf.length; ) {
    // One pass over the line for its end and a `#` comment (lines are a few dozen bytes).
    let nl = pos;
    let to = -1;
    for (; nl < buf.length && buf[nl] !== 10; nl++) if (to < 0 && buf[nl] === 35) to = nl;
    if (to < 0) to = nl;
    let from = pos;
    pos = nl + 1;
    while (from < to && isSpace(buf[from] as number)) from++;
    while (to > from && isSpace(buf[to - 1] as number)) to--;
    if (from === to) continue;
    const prefix = canonicalV4At(buf, from, to, v4);
    if (prefix >= 0) {
      const r = four.next();
      four.starts[r] = v4[0] as number;
      four.ends[r] = v4[1] as number;
      four.lists[r] = list;
      four.prefixes[r] = prefix;
      continue;
    }
    if (plainV6At(buf, from, to, groups, v6)) {
      const r = six.next();
      for (let k = 0; k < 4; k++) {
        // This word's host bits: all of them past the prefix, none before it.
        const hostBits = Math.min(32, Math.max(0, 128 - v6.prefix - 32 * (3 - k)));
        const mask = hostBits === 32 ? 0 : (0xffffffff << hostBits) >>> 0;
        const word = (((groups[2 * k] as number) << 16) | (groups[2 * k + 1] as number)) >>> 0;
        six.starts[r * 4 + k] = (word & mask) >>> 0;
        six.ends[r * 4 + k] = (word | ~mask) >>> 0;
      }
      six.lists[r] = list;
      six.prefixes[r] = v6.prefix;
      continue;
    }
    const c = parseCidr(latin1(buf, from, to));
    if (c?.version === 4) {
      const r = four.next();
      four.starts[r] = c.start;
      four.ends[r] = c.end;
      four.lists[r] = list;
      four.prefixes[r] = 32 - Math.round(Math.log2(c.end - c.start + 1));
    } else if (c?.version === 6) {
      const r = six.next();
      let host = 0;
      for (let k = 0; k < 4; k++) {
        const sh = BigInt(96 - 32 * k);
        const s = Number((c.start >> sh) & 0xffffffffn);
        const e = Number((c.end >> sh) & 0xffffffffn);
        six.starts[r * 4 + k] = s;
        six.ends[r * 4 + k] = e;
        host += popcount32((s ^ e) >>> 0);
      }
      six.lists[r] = list;
      six.prefixes[r] = 128 - host;
    } else rejected++;
  }
  return rejected;
}

/** Bytes as Latin-1 text, one character per byte (an odd line, for parseCidr to judge). */
function latin1(buf: Uint8Array, from: number, to: number): string {
  let text = '';
  for (let i = from; i < to; i++) text += String.fromCharCode(buf[i] as number);
  return text;
}

function popcount32(x: number): number {
  let v = x - ((x >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Receives merged segments in address order; `at` indexes bounds of `words` words in `from`/`to`. */
type SegmentSink = (from: Uint32Array, fromAt: number, to: Uint32Array, toAt: number, value: number) => void;

/**
 * Sorts the rows by start, the wider block first among equal starts, so that a block comes before
 * the blocks inside it. Returns the order to visit them in.
 */
function sortCidrRows(rows: CidrRows, listCount: number): Uint32Array {
  const { words: W, starts, ends, lists, prefixes } = rows;
  const order = new Uint32Array(rows.n);
  for (let i = 0; i < rows.n; i++) order[i] = i;
  if (W === 1 && listCount <= 1 << 15) {
    // An IPv4 row is its start, prefix and list, which fit one exact double (47 bits): a numeric
    // sort of doubles runs natively, where a comparator sort copies the rows into the JS heap and
    // grows it by megabytes that the process then keeps. The rows are rewritten in sorted order.
    const keys = new Float64Array(rows.n);
    for (let i = 0; i < rows.n; i++) keys[i] = ((starts[i] as number) * 64 + (prefixes[i] as number)) * 32768 + (lists[i] as number);
    keys.sort();
    for (let i = 0; i < rows.n; i++) {
      const key = keys[i] as number;
      const list = key % 32768;
      const prefix = ((key - list) / 32768) % 64;
      const start = ((key - list) / 32768 - prefix) / 64;
      starts[i] = start;
      ends[i] = prefix === 0 ? 0xffffffff : start + 2 ** (32 - prefix) - 1;
      prefixes[i] = prefix;
      lists[i] = list;
    }
    return order;
  }
  const cmp = (a: number, b: number) => {
    for (let k = 0; k < W; k++) {
      const x = starts[a * W + k] as number;
      const y = starts[b * W + k] as number;
      if (x !== y) return x < y ? -1 : 1;
    }
    return (prefixes[a] as number) - (prefixes[b] as number) || a - b;
  };
  return order.sort(cmp);
}

/**
 * The sorted, disjoint segments of one family's rows, handed to `sink` with touching segments of
 * the same list merged; returns how many. At each address the winner among the ranges covering it
 * is: a VPN list before a hosting list, then the longer prefix, then the list named first. CIDR
 * blocks are nested or disjoint, never partly overlapping, so one sweep in start order with a
 * stack of the blocks still open finds every winner: each stack entry keeps the best of itself and
 * the blocks around it. Typed arrays throughout; no row object is made.
 */
function sweepCidrRows(rows: CidrRows, order: Uint32Array, kinds: ('vpn' | 'hosting')[], sink: SegmentSink): number {
  const { words: W, starts, ends, lists, prefixes } = rows;
  /** Compares bound i of a with bound j of b. */
  const cmp = (a: Uint32Array, i: number, b: Uint32Array, j: number) => {
    for (let k = 0; k < W; k++) {
      const x = a[i * W + k] as number;
      const y = b[j * W + k] as number;
      if (x !== y) return x < y ? -1 : 1;
    }
    return 0;
  };
  /** Copies bound i of `from` to bound j of `to` (no subarray view made per row). */
  const copy = (to: Uint32Array, j: number, from: Uint32Array, i: number) => {
    for (let k = 0; k < W; k++) to[j * W + k] = from[i * W + k] as number;
  };
  /** x += 1 in place; false if it wrapped past the top of the space. */
  const increment = (x: Uint32Array) => {
    for (let k = W - 1; k >= 0; k--) {
      x[k] = ((x[k] as number) + 1) >>> 0;
      if (x[k] !== 0) return true;
    }
    return false;
  };
  const rank = (r: number) => (kinds[lists[r] as number] === 'vpn' ? 0 : 1);
  const better = (a: number, b: number) =>
    rank(a) !== rank(b)
      ? rank(a) < rank(b)
      : prefixes[a] !== prefixes[b]
        ? (prefixes[a] as number) > (prefixes[b] as number)
        : (lists[a] as number) < (lists[b] as number);

  // The segment not yet handed on, held back in case the next one continues it.
  const heldFrom = new Uint32Array(W);
  const heldTo = new Uint32Array(W);
  let heldValue = -1;
  let count = 0;
  const next = new Uint32Array(W);
  const flush = () => {
    if (heldValue >= 0) sink(heldFrom, 0, heldTo, 0, heldValue);
  };
  /** [cursor, to] belongs to `value`. */
  const emit = (to: Uint32Array, toAt: number, value: number) => {
    if (heldValue === value) {
      copy(next, 0, heldTo, 0);
      if (increment(next) && cmp(next, 0, cursor, 0) === 0) {
        copy(heldTo, 0, to, toAt);
        return;
      }
    }
    flush();
    copy(heldFrom, 0, cursor, 0);
    copy(heldTo, 0, to, toAt);
    heldValue = value;
    count++;
  };

  const stack = new Int32Array(rows.n);
  const best = new Int32Array(rows.n);
  let depth = 0;
  // The first address not yet emitted; `open` is false once it has run past the top of the space.
  const cursor = new Uint32Array(W);
  let open = false;
  const beforeInner = new Uint32Array(W);
  /** Closes the innermost open block: emits what is left of it, moves the cursor past it. */
  const close = () => {
    const top = stack[depth - 1] as number;
    if (open && cmp(cursor, 0, ends, top) <= 0) emit(ends, top, lists[best[depth - 1] as number] as number);
    copy(cursor, 0, ends, top);
    open = increment(cursor);
    depth--;
  };
  for (let o = 0; o < rows.n; o++) {
    const r = order[o] as number;
    while (depth > 0 && cmp(ends, stack[depth - 1] as number, starts, r) < 0) close();
    if (depth > 0 && open && cmp(cursor, 0, starts, r) < 0) {
      // The enclosing block's part before this one: up to this block's start minus one.
      copy(beforeInner, 0, starts, r);
      for (let k = W - 1; k >= 0; k--) {
        const borrow = beforeInner[k] === 0;
        beforeInner[k] = ((beforeInner[k] as number) - 1) >>> 0;
        if (!borrow) break;
      }
      emit(beforeInner, 0, lists[best[depth - 1] as number] as number);
    }
    copy(cursor, 0, starts, r);
    open = true;
    const around = depth > 0 ? (best[depth - 1] as number) : -1;
    best[depth] = around >= 0 && !better(r, around) ? around : r;
    stack[depth++] = r;
  }
  while (depth > 0) close();
  flush();
  return count;
}

/**
 * The shipped range lists' index from file contents (parseShippedRanges reads them through the host). The
 * sweep runs twice, once to count the segments and once to fill arrays of exactly that size, so no
 * worst-case buffer is made and copied.
 */
export function shippedRangesFrom(input: { list: RangeList; files: Uint8Array[] }[]): ShippedRanges & { rejected: number } {
  if (input.length > 0xffff) throw new Error('too many range lists');
  let lines = 0;
  let sixLines = 0;
  for (const { files } of input) {
    for (const f of files) {
      const c = countLines(f);
      lines += c.lines;
      sixLines += c.six;
    }
  }
  const four = new CidrRows(1, lines - sixLines);
  const six = new CidrRows(4, sixLines);
  let rejected = 0;
  input.forEach(({ files }, i) => {
    for (const f of files) rejected += addCidrs(f, i, four, six);
  });
  const kinds = input.map(({ list }) => list.kind);
  const none: SegmentSink = () => {};

  const order4 = sortCidrRows(four, kinds.length);
  const n4 = sweepCidrRows(four, order4, kinds, none);
  const starts = new Uint32Array(n4);
  const ends = new Uint32Array(n4);
  const values = new Int32Array(n4);
  let at = 0;
  sweepCidrRows(four, order4, kinds, (from, i, to, j, value) => {
    starts[at] = from[i] as number;
    ends[at] = to[j] as number;
    values[at++] = value;
  });

  const order6 = sortCidrRows(six, kinds.length);
  const v6 = Ipv6Index.sortedBuilder(sweepCidrRows(six, order6, kinds, none));
  // Bounds come out of the sweep in its own four-word buffers (index 0), as pushWords takes them.
  sweepCidrRows(six, order6, kinds, (from, _i, to, _j, value) => v6.pushWords(from, to, value));
  return {
    lists: input.map(({ list }) => list),
    v4: Ipv4Index.fromSorted(starts, ends, values, n4),
    v6: v6.done(),
    rejected,
  };
}
