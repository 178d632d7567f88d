import type { Ipv4Index } from './ranges.ts';

/**
 * The shipped facts about every IPv4 address in one table: its network owner, the shipped range
 * list it is on and its country, as the owner, range-list and country indexes say. Their boundaries
 * merged cut the address space into about 640,000 ranges, so one search answers what three
 * interval searches and an MMDB tree walk answered before. The ranges share about 120,000 distinct
 * combinations of the three facts; a range holds its combination's number, so a caller can keep
 * one answer per combination (LocalIpData does).
 *
 * Laid out for a lookup that misses the CPU cache as little as it can (random addresses otherwise
 * miss it at every step of a search):
 * - the ranges cover the whole space without gaps (a range no source covers has "none" facts), so
 *   a search only looks for the last range starting at or before the address;
 * - per /16, `firstIn` gives the ranges starting in it, and their starts are kept as their low 16
 *   bits only, 32 to a cache line: the last steps of a search (a /16 holds up to a few hundred
 *   ranges) read one line where 32-bit starts took two or three;
 * - the answer a caller keeps per combination turns the lookup's last step into one array read.
 * About 6 bytes a range and 8 a combination: 5 MB in all. (A second level of every 32nd start, to
 * read fewer lines in crowded /16s, and answers kept per range instead of per combination measured
 * no faster.)
 */
export class Ipv4Facts {
  private constructor(
    /** Per /16 b: the first range starting at or after its first address; firstIn[65536] = the range count. */
    private readonly firstIn: Uint32Array,
    /** Per range: the low 16 bits of its first address (the high 16 are its /16's number). */
    private readonly low16: Uint16Array,
    /** Per range: its combination's number. */
    private readonly combos: Uint32Array,
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
    const sweep = (fill?: { low16: Uint16Array; combos: Uint32Array; firstIn: Uint32Array }) => {
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
            for (; nextBlock * 65536 <= cur; nextBlock++) fill.firstIn[nextBlock] = n;
            fill.low16[n] = cur & 0xffff;
            fill.combos[n] = combo(here[0] as number, here[1] as number, here[2] as number);
          }
          n++;
        }
        if (next >= 2 ** 32) {
          if (fill) for (; nextBlock <= 65536; nextBlock++) fill.firstIn[nextBlock] = n;
          return n;
        }
        cur = next;
      }
    };
    // Filled straight from the sweep: no 32-bit starts are made, to be thrown away.
    const n = sweep();
    const low16 = new Uint16Array(n);
    const combos = new Uint32Array(n);
    const firstIn = new Uint32Array(65537);
    sweep({ low16, combos, firstIn });
    return new Ipv4Facts(firstIn, low16, combos, comboOwner.slice(0, comboCount), comboList.slice(0, comboCount), comboCountry.slice(0, comboCount));
  }

  /** How many ranges. */
  get size(): number {
    return this.low16.length;
  }

  /** How many distinct combinations of facts. */
  get comboCount(): number {
    return this.owners.length;
  }

  /** The combination of facts at `ip` (a 32-bit unsigned number), from the last range starting at or before it. */
  find(ip: number): number {
    const b = ip >>> 16;
    const key = ip & 0xffff;
    const low16 = this.low16;
    // Among the ranges starting in this /16, count those starting at or before `ip`; with none,
    // the answer is the range before them, which started in an earlier /16 (range 0 starts at 0).
    let lo = this.firstIn[b] as number;
    let n = (this.firstIn[b + 1] as number) - lo;
    while (n > 0) {
      const half = n >>> 1;
      if ((low16[lo + half] as number) <= key) {
        lo += half + 1;
        n -= half + 1;
      } else n = half;
    }
    return this.combos[lo - 1] as number;
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
