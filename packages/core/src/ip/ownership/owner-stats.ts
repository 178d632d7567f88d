import type { AsnBase } from '../local-data.ts';

/**
 * What the shipped data says about the size and shape of each network, per ASN and per organisation
 * (every ASN registered under the same name, so an operator's twenty regional ASNs weigh as one
 * operator), computed once at load from the owner table, the announced ranges and the shipped
 * hosting/VPN lists. The signals a company's own network rarely has: hundreds of ranges, millions of
 * addresses, IPv6 everywhere, or ranges in the datacenter lists. (How many countries the country table
 * spreads a network over was measured too: once size was counted it added nothing in the evaluation,
 * a fitted weight of 0.07 against 0.7 to 1.5 for the others, so it is not kept.)
 *
 * Columns, not objects: about 80,000 ASNs, each a handful of numbers (2 MB). A lookup is one binary
 * search of the sorted ASN column.
 */
export class OwnerStats {
  private constructor(
    /** The ASNs, ascending; row i of every column below is asns[i]. */
    private readonly asns: Int32Array,
    /** IPv4 ranges announced by the ASN. */
    readonly ranges4: Uint32Array,
    /** IPv6 ranges announced by the ASN. */
    readonly ranges6: Uint32Array,
    /** Of the ASN's IPv4 ranges, how many lie (at their first address) in a shipped hosting or VPN list. */
    readonly listed4: Uint32Array,
    /** Per ASN, its organisation (an index into the org columns). */
    readonly org: Int32Array,
    /** Per organisation: its ASNs and IPv4 addresses. */
    readonly orgAsns: Uint32Array,
    readonly orgAddresses4: Float64Array,
  ) {}

  /** The row of an ASN, or -1. */
  row(asn: number): number {
    return rowIn(this.asns, asn);
  }

  get size(): number {
    return this.asns.length;
  }

  /**
   * From the shipped base. `orgKey` reduces an owner's name to the key its organisation is grouped
   * by (the ownership source passes its name cleaning, so "KPN-AS - KPN B.V." and "KPN B.V." group).
   */
  static fromBase(base: AsnBase, orgKey: (name: string) => string): OwnerStats {
    const { asns: ownerAsns, names } = base.owners;
    // The distinct ASNs, ascending (a native typed-array sort, then duplicates squeezed out).
    const sorted = Int32Array.from(ownerAsns).sort();
    let n = 0;
    for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) sorted[n++] = sorted[i] as number;
    const distinct = sorted.slice(0, n);
    const ownerRow = new Int32Array(ownerAsns.length);
    for (let o = 0; o < ownerAsns.length; o++) ownerRow[o] = rowIn(distinct, ownerAsns[o] as number);

    // An ASN's organisation is the one of its first owner name.
    const org = new Int32Array(n).fill(-1);
    const orgIndex = new Map<string, number>();
    for (let o = 0; o < ownerAsns.length; o++) {
      const r = ownerRow[o] as number;
      if ((org[r] as number) >= 0) continue;
      const key = orgKey(names[o] as string);
      let g = orgIndex.get(key);
      if (g === undefined) {
        g = orgIndex.size;
        orgIndex.set(key, g);
      }
      org[r] = g;
    }

    const ranges4 = new Uint32Array(n);
    const addresses4 = new Float64Array(n);
    const ranges6 = new Uint32Array(n);
    const listed4 = new Uint32Array(n);
    const shipped = base.ranges;
    const { starts, ends, values } = base.asn4.arrays();
    for (let i = 0; i < values.length; i++) {
      const r = ownerRow[values[i] as number] as number;
      const start = starts[i] as number;
      ranges4[r] = (ranges4[r] as number) + 1;
      addresses4[r] = (addresses4[r] as number) + ((ends[i] as number) - start + 1);
      if (shipped && shipped.v4.lookup(start) >= 0) listed4[r] = (listed4[r] as number) + 1;
    }
    for (const v of base.asn6.arrays().values) {
      const r = ownerRow[v] as number;
      ranges6[r] = (ranges6[r] as number) + 1;
    }

    const groups = orgIndex.size;
    const orgAsns = new Uint32Array(groups);
    const orgAddresses4 = new Float64Array(groups);
    for (let r = 0; r < n; r++) {
      const g = org[r] as number;
      orgAsns[g] = (orgAsns[g] as number) + 1;
      orgAddresses4[g] = (orgAddresses4[g] as number) + (addresses4[r] as number);
    }
    return new OwnerStats(distinct, ranges4, ranges6, listed4, org, orgAsns, orgAddresses4);
  }
}

/** Where `asn` is in the ascending `asns`, or -1 (binary search). */
function rowIn(asns: Int32Array, asn: number): number {
  let lo = 0;
  let hi = asns.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = asns[mid] as number;
    if (v === asn) return mid;
    if (v < asn) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
