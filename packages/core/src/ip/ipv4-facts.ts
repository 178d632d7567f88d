import type { Ipv4Index } from './ranges.ts';

/**
 * The shipped facts about every IPv4 address in one table: its network owner, the shipped range
 * list it is on and its country, as the owner, range-list and country indexes say. Their boundaries
 * merged cut the address space into about 640,000 ranges, so one search answers what three
 * interval searches and an MMDB tree walk answered before. The ranges share about 110,000 distinct
 * combinations of the three facts; a range holds its combination's number, so a caller can keep
 * one answer per combination (LocalIpData does).
 *
 * Laid out for a lookup that misses the CPU cache as little as it can (random addresses otherwise
 * miss it at every step of a search, and each step waits for the one before):
 * - the ranges cover the whole space without gaps (a range no source covers has "none" facts), so
 *   a search only looks for the last range starting at or before the address;
 * - per /16, `index` holds, side by side, the first range starting in it and, when one combination
 *   covers the whole /16, that combination: a quarter of the bench's addresses end at that read;
 * - per range, one 32-bit word holds its start's low 16 bits (the high 16 are its /16's number)
 *   above its combination's low 16 bits, 16 to a cache line: the line the search ends on also
 *   gives the combination (a separate array of combination numbers was one more wait on memory);
 *   the combination's bits above 16 (about 110,000 need 17) are a byte array beside it.
 * About 5 bytes a range, 8 a /16 and 8 a combination: under 5 MB in all. (Measured no faster: a
 * second level of every 16th start, a first level per /20 (4 MB more), a search without branches
 * (slower), and answers kept per range instead of per combination.)
 */
export class Ipv4Facts {
  private constructor(
    /**
     * Per /16 b: at 2b, the first range starting at or after its first address (at 2 * 65536, the
     * range count); at 2b + 1, the combination covering all of it, or -1.
     */
    private readonly index: Int32Array,
    /** Per range: the low 16 bits of its first address, shifted up 16, above its combination's low 16 bits. */
    private readonly entries: Uint32Array,
    /** Per range: its combination's number above 16 bits. */
    private readonly highs: Uint8Array,
    /** Per combination: the owner index (-1: none). */
    private readonly owners: Int32Array,
    /** Per combination: the shipped range list index (-1: none). */
    private readonly lists: Int16Array,
    /** Per combination: the country index (-1: none). */
    private readonly countries: Int16Array,
  ) {}

  /** Merges the three indexes (range list and country indexes must fit 16 bits). */
  static merge(owners: Ipv4Index, lists: Ipv4Index, countries: Ipv4Index): Ipv4Facts {
    const sources = [owners.arrays(), lists.arrays(), countries.arrays()];
    for (const index of [lists, countries]) {
      for (const v of index.arrays().values) if (v >= 0x7fff) throw new Error('Ipv4Facts: a list or country index past 32,766');
    }
    // Combination numbers by their facts, in an open-addressing hash table over typed arrays: a Map
    // keyed by the three facts as one number took most of the build.
    let comboCount = 0;
    let comboOwner = new Int32Array(1 << 16);
    let comboList = new Int16Array(1 << 16);
    let comboCountry = new Int16Array(1 << 16);
    let slots = new Int32Array(1 << 18).fill(-1); // combination numbers; under half full
    const slotOf = (owner: number, list: number, country: number) => {
      const mask = slots.length - 1;
      let h = Math.imul(Math.imul(owner + 1, 0x9e3779b1) ^ Math.imul(list + 1, 0x85ebca6b) ^ (country + 1), 0xc2b2ae35);
      for (h = (h ^ (h >>> 15)) & mask; ; h = (h + 1) & mask) {
        const c = slots[h] as number;
        if (c < 0 || (comboOwner[c] === owner && comboList[c] === list && comboCountry[c] === country)) return h;
      }
    };
    const combo = (owner: number, list: number, country: number) => {
      const slot = slotOf(owner, list, country);
      const found = slots[slot] as number;
      if (found >= 0) return found;
      if (comboCount === comboOwner.length) {
        const widen = <T extends Int32Array | Int16Array>(a: T, make: (n: number) => T) => {
          const b = make(a.length * 2);
          b.set(a);
          return b;
        };
        comboOwner = widen(comboOwner, (n) => new Int32Array(n));
        comboList = widen(comboList, (n) => new Int16Array(n));
        comboCountry = widen(comboCountry, (n) => new Int16Array(n));
      }
      const c = comboCount++;
      comboOwner[c] = owner;
      comboList[c] = list;
      comboCountry[c] = country;
      if (comboCount * 2 > slots.length) {
        slots = new Int32Array(slots.length * 2).fill(-1);
        for (let k = 0; k < comboCount; k++) slots[slotOf(comboOwner[k] as number, comboList[k] as number, comboCountry[k] as number)] = k;
      } else slots[slot] = c;
      return c;
    };
    // Two sweeps, counting and then filling, so the range arrays are made once at their final size.
    const sweep = (fill?: { entries: Uint32Array; highs: Uint8Array; index: Int32Array }) => {
      const at = [0, 0, 0];
      const here = [-1, -1, -1];
      let n = 0;
      let nextBlock = 0;
      let cur = 0;
      for (;;) {
        let next = 2 ** 32;
        let changed = n === 0;
        for (let k = 0; k < 3; k++) {
          const s = sources[k] as (typeof sources)[number];
          const len = s.values.length;
          let j = at[k] as number;
          while (j < len && (s.ends[j] as number) < cur) j++;
          at[k] = j;
          let value = -1;
          let boundary = 2 ** 32;
          if (j < len) {
            if ((s.starts[j] as number) <= cur) {
              value = s.values[j] as number;
              boundary = (s.ends[j] as number) + 1;
            } else boundary = s.starts[j] as number;
          }
          if (value !== here[k]) changed = true;
          here[k] = value;
          if (boundary < next) next = boundary;
        }
        if (changed) {
          if (fill) {
            // Range n is the first to start at or after the /16s up to this one not yet given one.
            for (; nextBlock * 65536 <= cur; nextBlock++) fill.index[2 * nextBlock] = n;
            const c = combo(here[0] as number, here[1] as number, here[2] as number);
            if (c >= 1 << 24) throw new Error('Ipv4Facts: more than 2^24 combinations of facts');
            fill.entries[n] = (((cur & 0xffff) << 16) | (c & 0xffff)) >>> 0;
            fill.highs[n] = c >>> 16;
          }
          n++;
        }
        if (next >= 2 ** 32) {
          if (fill) for (; nextBlock <= 65536; nextBlock++) fill.index[2 * nextBlock] = n;
          return n;
        }
        cur = next;
      }
    };
    // Filled straight from the sweep: no 32-bit starts are made, to be thrown away.
    const n = sweep();
    const entries = new Uint32Array(n);
    const highs = new Uint8Array(n);
    const index = new Int32Array(2 * 65537);
    sweep({ entries, highs, index });
    // Neighbouring ranges differ in some fact, so one combination covers a /16 when no range
    // starts in it, or one starts at its first address and is the last to start in it.
    for (let b = 0; b <= 65536; b++) {
      const lo = index[2 * b] as number;
      const count = b < 65536 ? (index[2 * b + 2] as number) - lo : -1;
      const k = count === 0 ? lo - 1 : count === 1 && (entries[lo] as number) >>> 16 === 0 ? lo : -1;
      index[2 * b + 1] = k < 0 ? -1 : ((entries[k] as number) & 0xffff) | ((highs[k] as number) << 16);
    }
    return new Ipv4Facts(index, entries, highs, comboOwner.slice(0, comboCount), comboList.slice(0, comboCount), comboCountry.slice(0, comboCount));
  }

  /** How many ranges. */
  get size(): number {
    return this.entries.length;
  }

  /** How many distinct combinations of facts. */
  get comboCount(): number {
    return this.owners.length;
  }

  /** The combination of facts at `ip` (a 32-bit unsigned number), from the last range starting at or before it. */
  find(ip: number): number {
    const b = ip >>> 16;
    const index = this.index;
    const whole = index[2 * b + 1] as number;
    if (whole >= 0) return whole;
    // Among the ranges starting in this /16, count those starting at or before `ip` (a word at or
    // below `bound`, whatever its combination); with none, the answer is the range before them,
    // which started in an earlier /16 (range 0 starts at 0).
    const entries = this.entries;
    const bound = ((ip << 16) | 0xffff) >>> 0;
    let lo = index[2 * b] as number;
    let n = (index[2 * b + 2] as number) - lo;
    while (n > 0) {
      const half = n >>> 1;
      if ((entries[lo + half] as number) <= bound) {
        lo += half + 1;
        n -= half + 1;
      } else n = half;
    }
    return ((entries[lo - 1] as number) & 0xffff) | ((this.highs[lo - 1] as number) << 16);
  }

  /** Combination c's owner index, or -1. */
  owner(c: number): number {
    return this.owners[c] as number;
  }

  /** Combination c's shipped range list index, or -1. */
  list(c: number): number {
    return this.lists[c] as number;
  }

  /** Combination c's country index, or -1. */
  country(c: number): number {
    return this.countries[c] as number;
  }
}
