/**
 * Interval indexes for IP ranges: disjoint, sorted segments searched in O(log n).
 * Sources overlap (a VPN /24 inside a hosting /16 inside an ISP /8); the builder flattens them so
 * each address resolves to the most specific range covering it (ties: the higher priority).
 */

export interface RangeInput<T extends number | bigint> {
  start: T;
  end: T;
  value: number;
  /** Breaks ties between equally specific ranges; higher wins. */
  priority?: number;
}

interface Segment<T> {
  start: T;
  end: T;
  value: number;
}

/**
 * Boundary sweep: every start and end+1 is a boundary; between two boundaries the winner is the
 * narrowest active range. Active ranges live in a heap ordered by (size, -priority) with lazy
 * deletion. Adjacent segments with the same value are merged.
 */
function flattenCluster<T extends number | bigint>(inputs: RangeInput<T>[], one: T, sub: (a: T, b: T) => T, add: (a: T, b: T) => T): Segment<T>[] {
  if (!inputs.length) return [];
  const items = inputs.map((r, i) => ({ ...r, size: sub(r.end, r.start), priority: r.priority ?? 0, id: i }));
  type Item = (typeof items)[number];
  const better = (a: Item, b: Item) =>
    a.size < b.size ? true : a.size > b.size ? false : a.priority > b.priority || (a.priority === b.priority && a.id > b.id);
  const heap: Item[] = [];
  const push = (x: Item) => {
    heap.push(x);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const hp = heap[p];
      const hi = heap[i];
      if (!hp || !hi || !better(hi, hp)) break;
      heap[p] = hi;
      heap[i] = hp;
      i = p;
    }
  };
  const pop = () => {
    const last = heap.pop();
    if (!heap.length || !last) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      const hm = () => heap[m] as Item;
      if (l < heap.length && better(heap[l] as Item, hm())) m = l;
      if (r < heap.length && better(heap[r] as Item, hm())) m = r;
      if (m === i) break;
      const t = heap[m] as Item;
      heap[m] = heap[i] as Item;
      heap[i] = t;
      i = m;
    }
  };
  const byStart = [...items].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  const points = new Set<T>();
  for (const r of items) {
    points.add(r.start);
    points.add(add(r.end, one));
  }
  const bounds = [...points].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const out: Segment<T>[] = [];
  let next = 0;
  for (let i = 0; i < bounds.length - 1; i++) {
    const lo = bounds[i] as T;
    const hi = sub(bounds[i + 1] as T, one);
    while (next < byStart.length && (byStart[next] as Item).start <= lo) push(byStart[next++] as Item);
    while (heap.length && (heap[0] as Item).end < lo) pop();
    const top = heap[0];
    if (!top) continue;
    const prev = out[out.length - 1];
    if (prev && prev.value === top.value && sub(lo, one) === prev.end) prev.end = hi;
    else out.push({ start: lo, end: hi, value: top.value });
  }
  return out;
}

/**
 * Sorts once, then runs the boundary sweep only inside clusters of overlapping ranges: real data is
 * mostly disjoint (the ASN table has one overlap in 400,000 rows), so most ranges pass straight
 * through and the build stays O(n log n) with a small constant.
 */
function flatten<T extends number | bigint>(inputs: RangeInput<T>[], one: T, sub: (a: T, b: T) => T, add: (a: T, b: T) => T): Segment<T>[] {
  const sorted = [...inputs].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.end > b.end ? -1 : a.end < b.end ? 1 : 0));
  const out: Segment<T>[] = [];
  const emit = (seg: Segment<T>) => {
    const prev = out[out.length - 1];
    if (prev && prev.value === seg.value && sub(seg.start, one) === prev.end) prev.end = seg.end;
    else out.push({ ...seg });
  };
  let i = 0;
  while (i < sorted.length) {
    const first = sorted[i] as RangeInput<T>;
    let j = i;
    let clusterEnd = first.end;
    while (j + 1 < sorted.length && (sorted[j + 1] as RangeInput<T>).start <= clusterEnd) {
      j++;
      const e = (sorted[j] as RangeInput<T>).end;
      if (e > clusterEnd) clusterEnd = e;
    }
    if (i === j) emit({ start: first.start, end: first.end, value: first.value });
    else for (const seg of flattenCluster(sorted.slice(i, j + 1), one, sub, add)) emit(seg);
    i = j + 1;
  }
  return out;
}

/** The first-level table of every empty Ipv4Index: no segments in any /16. */
const NO_BUCKETS = new Uint32Array(65537);

/**
 * IPv4: three typed arrays (12 bytes per segment) plus a first-level table on the top 16 bits, so a
 * lookup binary-searches only the few segments of its /16 instead of the whole table — random
 * addresses would otherwise miss the CPU cache at nearly every step of a 400,000-entry search.
 */
export class Ipv4Index {
  /** buckets[b] = index of the first segment that ends at or after the start of /16 number b. */
  private readonly buckets: Uint32Array;

  private constructor(
    private readonly starts: Uint32Array,
    private readonly ends: Uint32Array,
    private readonly values: Int32Array,
  ) {
    // An empty index (most imported layers) shares one table of zeros instead of making 256 KB.
    if (ends.length === 0) {
      this.buckets = NO_BUCKETS;
      return;
    }
    this.buckets = new Uint32Array(65537);
    let seg = 0;
    for (let b = 0; b < 65536; b++) {
      const first = b * 65536;
      while (seg < ends.length && (ends[seg] as number) < first) seg++;
      this.buckets[b] = seg;
    }
    this.buckets[65536] = ends.length;
  }

  /**
   * From parallel arrays already sorted by start (the shipped ASN table). An overlapping row is
   * clipped to begin after its predecessor, which keeps the build allocation-free; the ASN data has
   * a single such overlap.
   */
  static fromSorted(starts: Uint32Array, ends: Uint32Array, values: Int32Array, count: number): Ipv4Index {
    let n = 0;
    for (let i = 0; i < count; i++) {
      let s = starts[i] as number;
      const e = ends[i] as number;
      if (n > 0 && s <= (ends[n - 1] as number)) s = (ends[n - 1] as number) + 1;
      if (s > e) continue;
      starts[n] = s;
      ends[n] = e;
      values[n] = values[i] as number;
      n++;
    }
    // Views, not copies: at most a few clipped rows' worth of slack, and no second set of arrays.
    return new Ipv4Index(starts.subarray(0, n), ends.subarray(0, n), values.subarray(0, n));
  }

  /** The segments as parallel arrays (views, not copies), sorted and disjoint: for snapshots. */
  arrays(): { starts: Uint32Array; ends: Uint32Array; values: Int32Array } {
    return { starts: this.starts, ends: this.ends, values: this.values };
  }

  static build(inputs: RangeInput<number>[]): Ipv4Index {
    const segs = flatten(
      inputs,
      1,
      (a, b) => a - b,
      (a, b) => a + b,
    );
    const starts = new Uint32Array(segs.length);
    const ends = new Uint32Array(segs.length);
    const values = new Int32Array(segs.length);
    segs.forEach((s, i) => {
      starts[i] = s.start;
      ends[i] = s.end;
      values[i] = s.value;
    });
    return new Ipv4Index(starts, ends, values);
  }

  get size(): number {
    return this.starts.length;
  }

  /** How many boundaries `boundaryAt` has: each segment's first address and the one after its last. */
  get boundaryCount(): number {
    return this.starts.length * 2;
  }

  /** The i-th boundary, in ascending order (segments are sorted and disjoint). */
  boundaryAt(i: number): number {
    return i % 2 === 0 ? (this.starts[i / 2] as number) : (this.ends[(i - 1) / 2] as number) + 1;
  }

  /** The value of the range containing `ip`, or -1. */
  lookup(ip: number): number {
    const starts = this.starts;
    const b = ip >>> 16;
    let lo = this.buckets[b] as number;
    // A segment that starts in a later /16 can still be the answer's successor; the last one that
    // starts at or before `ip` lies in [buckets[b], buckets[b + 1]].
    let hi = Math.min(this.buckets[b + 1] as number, starts.length - 1);
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if ((starts[mid] as number) <= ip) lo = mid + 1;
      else hi = mid - 1;
    }
    if (hi < 0 || (this.ends[hi] as number) < ip) return -1;
    return this.values[hi] as number;
  }
}

const MASK64 = (1n << 64n) - 1n;
export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Compares two 128-bit numbers held as four 32-bit words, most significant first. */
function compareWords(a: Uint32Array, b: Uint32Array): number {
  for (let k = 0; k < 4; k++) {
    const x = a[k] as number;
    const y = b[k] as number;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** IPv6: bounds as high and low 64-bit halves in typed arrays (no bigint objects kept alive). */
export class Ipv6Index {
  private constructor(
    private readonly startHi: BigUint64Array,
    private readonly startLo: BigUint64Array,
    private readonly endHi: BigUint64Array,
    private readonly endLo: BigUint64Array,
    private readonly values: Int32Array,
  ) {}

  /**
   * An empty index with room for `capacity` sorted, disjoint segments, filled with `push` (bigints)
   * or `pushWords` (each bound as four 32-bit words, most significant first), which a bulk loader
   * uses to fill 100,000 rows without allocating a bigint per bound.
   */
  static sortedBuilder(capacity: number): {
    push(start: bigint, end: bigint, value: number): void;
    pushWords(start: Uint32Array, end: Uint32Array, value: number): void;
    done(): Ipv6Index;
  } {
    const idx = new Ipv6Index(
      new BigUint64Array(capacity),
      new BigUint64Array(capacity),
      new BigUint64Array(capacity),
      new BigUint64Array(capacity),
      new Int32Array(capacity),
    );
    let n = 0;
    // The previous segment's end, as words, for the clipping rule of Ipv4Index.fromSorted.
    const lastEnd = new Uint32Array(4);
    let any = false;
    const wordsOf = (v: bigint, into: Uint32Array) => {
      for (let k = 3; k >= 0; k--) {
        into[k] = Number(v & 0xffffffffn);
        v >>= 32n;
      }
    };
    const sw = new Uint32Array(4);
    const ew = new Uint32Array(4);
    // 32-bit views of the 64-bit halves, made once: element i's low word is 2i on little-endian.
    const view = (a: BigUint64Array) => new Uint32Array(a.buffer, a.byteOffset, a.length * 2);
    const sHi = view(idx.startHi);
    const sLo = view(idx.startLo);
    const eHi = view(idx.endHi);
    const eLo = view(idx.endLo);
    const writeWords = (i: number, start: Uint32Array, end: Uint32Array, value: number) => {
      if (!LITTLE_ENDIAN) {
        const big = (w: Uint32Array) =>
          (BigInt(w[0] as number) << 96n) | (BigInt(w[1] as number) << 64n) | (BigInt(w[2] as number) << 32n) | BigInt(w[3] as number);
        idx.set(i, big(start), big(end), value);
        return;
      }
      sHi[2 * i] = start[1] as number;
      sHi[2 * i + 1] = start[0] as number;
      sLo[2 * i] = start[3] as number;
      sLo[2 * i + 1] = start[2] as number;
      eHi[2 * i] = end[1] as number;
      eHi[2 * i + 1] = end[0] as number;
      eLo[2 * i] = end[3] as number;
      eLo[2 * i + 1] = end[2] as number;
      idx.values[i] = value;
    };
    const pushWords = (start: Uint32Array, end: Uint32Array, value: number) => {
      sw.set(start);
      if (any && compareWords(sw, lastEnd) <= 0) {
        sw.set(lastEnd);
        // lastEnd + 1; an end of all ones has no successor, so nothing is left of this row.
        let k = 3;
        for (; k >= 0 && sw[k] === 0xffffffff; k--) sw[k] = 0;
        if (k < 0) return;
        sw[k] = (sw[k] as number) + 1;
      }
      if (compareWords(sw, end) > 0) return;
      writeWords(n++, sw, end, value);
      lastEnd.set(end);
      any = true;
    };
    return {
      push(start, end, value) {
        wordsOf(start, sw);
        wordsOf(end, ew);
        pushWords(sw, ew, value);
      },
      pushWords,
      done: () =>
        new Ipv6Index(
          idx.startHi.subarray(0, n),
          idx.startLo.subarray(0, n),
          idx.endHi.subarray(0, n),
          idx.endLo.subarray(0, n),
          idx.values.subarray(0, n),
        ),
    };
  }

  /** The segments as parallel arrays (views, not copies), sorted and disjoint: for snapshots. */
  arrays(): { startHi: BigUint64Array; startLo: BigUint64Array; endHi: BigUint64Array; endLo: BigUint64Array; values: Int32Array } {
    return { startHi: this.startHi, startLo: this.startLo, endHi: this.endHi, endLo: this.endLo, values: this.values };
  }

  /** From arrays `arrays()` gave: sorted and disjoint already, so they are taken as they are. */
  static fromArrays(a: ReturnType<Ipv6Index['arrays']>): Ipv6Index {
    const n = a.values.length;
    if (a.startHi.length !== n || a.startLo.length !== n || a.endHi.length !== n || a.endLo.length !== n) {
      throw new Error('Ipv6Index.fromArrays: arrays of different lengths');
    }
    return new Ipv6Index(a.startHi, a.startLo, a.endHi, a.endLo, a.values);
  }

  static fromSegments(segs: { start: bigint; end: bigint; value: number }[]): Ipv6Index {
    const n = segs.length;
    const idx = new Ipv6Index(new BigUint64Array(n), new BigUint64Array(n), new BigUint64Array(n), new BigUint64Array(n), new Int32Array(n));
    for (const [i, seg] of segs.entries()) idx.set(i, seg.start, seg.end, seg.value);
    return idx;
  }

  private set(i: number, start: bigint, end: bigint, value: number) {
    this.startHi[i] = start >> 64n;
    this.startLo[i] = start & MASK64;
    this.endHi[i] = end >> 64n;
    this.endLo[i] = end & MASK64;
    this.values[i] = value;
  }

  static build(inputs: RangeInput<bigint>[]): Ipv6Index {
    return Ipv6Index.fromSegments(
      flatten(
        inputs,
        1n,
        (a, b) => a - b,
        (a, b) => a + b,
      ),
    );
  }

  get size(): number {
    return this.values.length;
  }

  lookup(ip: bigint): number {
    const hi = ip >> 64n;
    const lo = ip & MASK64;
    let a = 0;
    let b = this.values.length - 1;
    while (a <= b) {
      const mid = (a + b) >>> 1;
      const sh = this.startHi[mid] as bigint;
      if (sh < hi || (sh === hi && (this.startLo[mid] as bigint) <= lo)) a = mid + 1;
      else b = mid - 1;
    }
    if (b < 0) return -1;
    const eh = this.endHi[b] as bigint;
    if (eh < hi || (eh === hi && (this.endLo[b] as bigint) < lo)) return -1;
    return this.values[b] as number;
  }
}
