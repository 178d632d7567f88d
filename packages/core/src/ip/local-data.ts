import classes from '../../data/network-classes.json' with { type: 'json' };
import type { ParsedIp } from '../net/ip.ts';
import { groupsToBigint, Ipv4Index, Ipv6Index, ipv4ToNumber, type RangeInput } from './ranges.ts';
import type { TrafficType } from './types.ts';

/**
 * The free local layer of the waterfall, held in memory: who owns every routed address (ASN ranges
 * with organisation names), what kind of network that is (reviewed data in
 * packages/core/data/network-classes.json), the shipped VPN and hosting range lists (reviewed in
 * packages/core/data/ip-ranges/lists.json), imported VPN/hosting/ISP ranges and company records.
 */

export type RangeKind = 'vpn' | 'hosting' | 'isp';

export interface AsnRow<T extends number | bigint> {
  start: T;
  end: T;
  asn: number;
  name: string;
}

export interface OverlayRow<T extends number | bigint> {
  start: T;
  end: T;
  kind: RangeKind;
  provider: string | null;
}

export interface CompanyRow<T extends number | bigint> {
  start: T;
  end: T;
  domain: string;
  company_name: string;
  confidence: number;
  source: 'import' | 'learned';
}

export interface LocalAnswer {
  /** The local verdict; null when only paid providers can tell. */
  traffic_type: TrafficType | null;
  asn: number | null;
  org: string | null;
  vpn_provider: string | null;
  company: { domain: string; company_name: string; confidence: number; source: 'import' | 'learned' | 'asn' } | null;
  reason: string;
}

interface Owner {
  asn: number;
  name: string;
  type: TrafficType | null;
  label: string | null;
  vpnProvider: string | null;
  domain: string | null;
  companyName: string | null;
}

interface AsnClass {
  type: TrafficType;
  label: string;
  vpn_provider?: string;
  domain?: string;
  company_name?: string;
}

const ASN_CLASSES = new Map(Object.entries(classes.asns as Record<string, AsnClass>).map(([asn, c]) => [Number(asn), c]));
const NAME_RULES = classes.name_rules.map((r) => ({ type: r.type as TrafficType, re: new RegExp(r.pattern, 'i') }));
const KIND_PRIORITY: Record<RangeKind, number> = { vpn: 3, hosting: 2, isp: 1 };

/** The class alone (no object made), for classifying 90,000 owners at load. */
function classOf(asn: number, name: string): TrafficType | null {
  const curated = ASN_CLASSES.get(asn);
  if (curated) return curated.type;
  for (const rule of NAME_RULES) if (rule.re.test(name)) return rule.type;
  return null;
}

/** The class of a network from its ASN (curated) or its organisation name (rules); null = a business. */
export function classifyNetwork(asn: number, name: string): Omit<Owner, 'asn' | 'name'> {
  return describeOwner(asn, name, classOf(asn, name));
}

/** An owner's details around a class already worked out (classOf). */
function describeOwner(asn: number, name: string, type: TrafficType | null): Omit<Owner, 'asn' | 'name'> {
  const curated = ASN_CLASSES.get(asn);
  return {
    type,
    label: curated?.label ?? null,
    vpnProvider: curated ? (curated.vpn_provider ?? null) : type === 'vpn' ? name : null,
    domain: curated?.domain ?? null,
    companyName: curated?.company_name ?? null,
  };
}

/**
 * The network owners, column by column: an ASN, a name and a one-byte class each. As objects, the
 * 90,000 owners took a third of the loaded heap, and building them churned the young generation
 * up to its largest size, which the process then keeps. An Owner object is made per lookup.
 */
class Owners {
  private readonly types: Uint8Array;

  constructor(
    private readonly asns: Int32Array,
    private readonly names: string[],
  ) {
    this.types = new Uint8Array(names.length);
    for (let i = 0; i < names.length; i++) this.types[i] = VERDICTS.indexOf(classOf(asns[i] as number, names[i] as string));
  }

  get(i: number): Owner {
    const asn = this.asns[i] as number;
    const name = this.names[i] as string;
    // The class was worked out at load: a lookup does not run the name rules again.
    return { asn, name, ...describeOwner(asn, name, VERDICTS[this.types[i] as number] ?? null) };
  }

  /** Per owner, the local verdict as an index into VERDICTS (0 = ask the providers). */
  verdictCodes(): Uint8Array {
    return this.types.map((code, i) =>
      // A business owner is answered locally only when curated with its domain.
      VERDICTS[code] === 'business' && !ASN_CLASSES.get(this.asns[i] as number)?.domain ? 0 : code,
    );
  }
}

export interface LocalLayers {
  asn4: AsnRow<number>[];
  asn6: AsnRow<bigint>[];
  overlays4?: OverlayRow<number>[];
  overlays6?: OverlayRow<bigint>[];
  companies4?: CompanyRow<number>[];
  companies6?: CompanyRow<bigint>[];
}

const VERDICTS: (TrafficType | null)[] = [null, 'business', 'isp', 'hosting', 'vpn', 'education', 'government', 'unknown'];
/** A table cell whose addresses do not all share one verdict: ask the interval search. */
const MIXED = 15;
/** /20 cells at or above this point to a block of /24 cells. */
const SUB = 16;

/** One shipped range list, as packages/core/data/ip-ranges/lists.json describes it. */
export interface RangeList {
  id: string;
  kind: 'vpn' | 'hosting';
  /** Who operates the ranges, when the list says; an unnamed VPN list falls back to the owner. */
  provider: string | null;
  /** Completes "The address …" in the answer, e.g. "is a published crawler address". */
  reason: string;
}

/**
 * The shipped VPN and hosting range lists, flattened: each address resolves to one list. Any VPN
 * list beats any hosting list; within a kind the most specific range wins, then the list named
 * first. Values are indexes into `lists`.
 */
export interface ShippedRanges {
  lists: RangeList[];
  v4: Ipv4Index;
  v6: Ipv6Index;
}

/**
 * The shipped base data: the network owners as columns with their IPv4 and IPv6 ranges, and the
 * shipped range lists (absent in a base made without them, which then answers from owners alone).
 */
export interface AsnBase {
  /** Owner i is AS asns[i], named names[i]; range values are owner indexes. */
  owners: { asns: Int32Array; names: string[] };
  asn4: Ipv4Index;
  asn6: Ipv6Index;
  ranges?: ShippedRanges;
}

const NO_SHIPPED_RANGES: ShippedRanges = { lists: [], v4: Ipv4Index.build([]), v6: Ipv6Index.build([]) };

/** Until the first bulk classification builds the table. */
const EMPTY_TOP = new Uint32Array(0);

const article = (t: string) => (/^[aeiou]/.test(t) ? 'an' : 'a');

export class LocalIpData {
  private constructor(
    private readonly owners: Owners,
    private readonly asn4: Ipv4Index,
    private readonly asn6: Ipv6Index,
    private readonly shipped: ShippedRanges,
    private readonly overlays: { kind: RangeKind; provider: string | null }[],
    private readonly overlay4: Ipv4Index,
    private readonly overlay6: Ipv6Index,
    private readonly companies: CompanyRow<number | bigint>[],
    private readonly company4: Ipv4Index,
    private readonly company6: Ipv6Index,
  ) {}

  /**
   * A copy with new imported layers (VPN/hosting/ISP ranges, company records) over the same network
   * owners and shipped range lists, so a reload after an import or a learned record rebuilds
   * neither.
   */
  withLayers(layers: Omit<LocalLayers, 'asn4' | 'asn6'>): LocalIpData {
    const next = LocalIpData.build({ asn4: [], asn6: [], ...layers });
    return new LocalIpData(
      this.owners,
      this.asn4,
      this.asn6,
      this.shipped,
      next.overlays,
      next.overlay4,
      next.overlay6,
      next.companies,
      next.company4,
      next.company6,
    );
  }

  /**
   * From a prebuilt base (the host fills typed arrays straight from the shipped files, allocating
   * no row objects) plus the imported layers.
   */
  static fromBase(base: AsnBase, layers: Omit<LocalLayers, 'asn4' | 'asn6'> = {}): LocalIpData {
    const owners = new Owners(base.owners.asns, base.owners.names);
    const empty = LocalIpData.build({ asn4: [], asn6: [] });
    return new LocalIpData(
      owners,
      base.asn4,
      base.asn6,
      base.ranges ?? NO_SHIPPED_RANGES,
      empty.overlays,
      empty.overlay4,
      empty.overlay6,
      empty.companies,
      empty.company4,
      empty.company6,
    ).withLayers(layers);
  }

  static build(input: LocalLayers): LocalIpData {
    const asns: number[] = [];
    const names: string[] = [];
    const ownerOf = new Map<string, number>();
    const owner = (asn: number, name: string) => {
      const key = `${asn}|${name}`;
      let i = ownerOf.get(key);
      if (i === undefined) {
        i = names.length;
        asns.push(asn);
        names.push(name);
        ownerOf.set(key, i);
      }
      return i;
    };
    const asn4 = Ipv4Index.build(input.asn4.map((r) => ({ start: r.start, end: r.end, value: owner(r.asn, r.name) })));
    const asn6 = Ipv6Index.build(input.asn6.map((r) => ({ start: r.start, end: r.end, value: owner(r.asn, r.name) })));

    const overlays: { kind: RangeKind; provider: string | null }[] = [];
    const overlayIndex = <T extends number | bigint>(rows: OverlayRow<T>[]): RangeInput<T>[] =>
      rows.map((r) => {
        overlays.push({ kind: r.kind, provider: r.provider });
        return { start: r.start, end: r.end, value: overlays.length - 1, priority: KIND_PRIORITY[r.kind] };
      });
    const overlay4 = Ipv4Index.build(overlayIndex(input.overlays4 ?? []));
    const overlay6 = Ipv6Index.build(overlayIndex(input.overlays6 ?? []));

    const companies: CompanyRow<number | bigint>[] = [];
    const companyIndex = <T extends number | bigint>(rows: CompanyRow<T>[]): RangeInput<T>[] =>
      rows.map((r) => {
        companies.push(r);
        return { start: r.start, end: r.end, value: companies.length - 1, priority: r.source === 'import' ? 2 : 1 };
      });
    const company4 = Ipv4Index.build(companyIndex(input.companies4 ?? []));
    const company6 = Ipv6Index.build(companyIndex(input.companies6 ?? []));
    const owners = new Owners(Int32Array.from(asns), names);
    return new LocalIpData(owners, asn4, asn6, NO_SHIPPED_RANGES, overlays, overlay4, overlay6, companies, company4, company6);
  }

  get stats() {
    return {
      asnSegments: this.asn4.size + this.asn6.size,
      shippedRangeSegments: this.shipped.v4.size + this.shipped.v6.size,
      overlaySegments: this.overlay4.size + this.overlay6.size,
      companySegments: this.company4.size + this.company6.size,
    };
  }

  /** Per owner, the local verdict as an index into VERDICTS (0 = ask the providers). */
  private verdictCodes: Uint8Array | undefined;

  /** Per /16: its block of sixteen /20 cells in `mid` (a shared uniform block, or its own). */
  private top = EMPTY_TOP;
  /** Per /20: a verdict code, or SUB + the number of its block of sixteen /24 cells in `low`. */
  private mid = new Uint16Array(0);
  /** Per /24 of a /20 whose addresses disagree: a verdict code. */
  private low = new Uint8Array(0);

  /**
   * Bulk classification of an IPv4 address string: parse, then a three-level table walk. The /16
   * table (256 KiB) and the /20 cells stay in the CPU cache; only the one address in twenty that
   * lies in a /20 whose addresses disagree reads a /24 cell, and only /24s that disagree fall back
   * to the interval search. A flat per-/24 table (16 MiB) measured three times slower than this: a
   * random read there misses every cache. Built on first use (a few hundred milliseconds), so
   * reloads after an import or a learned record do not pay for it unless something classifies in
   * bulk. null = not a valid dotted quad, or ask the providers.
   */
  classifyV4(address: string): TrafficType | null {
    const ip = ipv4ToNumber(address);
    if (ip < 0) return null;
    if (this.top === EMPTY_TOP) this.buildVerdictTable();
    let code = this.mid[((this.top[ip >>> 16] as number) << 4) | ((ip >>> 12) & 15)] as number;
    if (code >= SUB) code = this.low[((code - SUB) << 4) | ((ip >>> 8) & 15)] as number;
    return code === MIXED ? this.trafficTypeV4(ip) : (VERDICTS[code] as TrafficType | null);
  }

  /**
   * Every address between two consecutive segment boundaries (of the owner, shipped-list, overlay
   * and company indexes together) gets the same verdict, so one interval search per interval fills
   * the table exactly. Works one /16 at a time through a 256-cell scratch, so building holds no
   * 16 MiB table.
   */
  private buildVerdictTable(): void {
    // The indexes' boundaries merged in order, without materialising a million-entry array.
    const indexes = [this.asn4, this.shipped.v4, this.overlay4, this.company4];
    const heads = indexes.map(() => 0);
    const nextBoundary = () => {
      let best = -1;
      let value = 2 ** 32;
      for (let k = 0; k < indexes.length; k++) {
        const idx = indexes[k] as Ipv4Index;
        const h = heads[k] as number;
        if (h < idx.boundaryCount && idx.boundaryAt(h) < value) {
          value = idx.boundaryAt(h);
          best = k;
        }
      }
      if (best >= 0) heads[best] = (heads[best] as number) + 1;
      return value; // 2^32 once all are spent
    };
    // The interval [lo, hi) reaching into the current /16; empty intervals (duplicates) are skipped.
    let lo = 0;
    let hi = nextBoundary();
    while (hi === lo) hi = nextBoundary();
    const advance = () => {
      lo = hi;
      if (lo >= 2 ** 32) return;
      do hi = nextBoundary();
      while (hi === lo);
    };

    const UNSET = 255;
    const cells = new Uint8Array(256); // the current /16's /24 verdicts
    const mark = (cell: number, code: number) => {
      const was = cells[cell] as number;
      cells[cell] = was === UNSET || was === code ? code : MIXED;
    };
    const uniform = (from: number, n: number) => {
      const first = cells[from] as number;
      for (let k = 1; k < n; k++) if (cells[from + k] !== first) return -1;
      return first;
    };
    // Blocks 0..VERDICTS.length-1 of `mid` are the shared uniform ones; disagreeing /16s follow.
    const top = new Uint32Array(65536);
    // Sized for the worst case (every /16 its own block), then trimmed.
    const mid = new Uint16Array((VERDICTS.length + 65536) * 16);
    let midLength = 0;
    for (let c = 0; c < VERDICTS.length; c++) for (let q = 0; q < 16; q++) mid[midLength++] = c;
    const low = new Uint8Array((0xffff - SUB) * 16);
    let lowLength = 0;
    const lowBlocks = new Map<string, number>();

    let codeOf = -1; // the interval start whose verdict `code` holds
    let code = 0;
    for (let h = 0; h < 65536; h++) {
      const from16 = h * 65536;
      const to16 = from16 + 65536;
      cells.fill(UNSET);
      for (;;) {
        const a = Math.max(lo, from16) - from16;
        const b = Math.min(hi, to16) - from16; // exclusive
        if (codeOf !== lo) {
          code = VERDICTS.indexOf(this.trafficTypeV4(lo));
          codeOf = lo;
        }
        const firstFull = Math.ceil(a / 256);
        const endFull = Math.floor(b / 256);
        if (firstFull < endFull) cells.fill(code, firstFull, endFull);
        if (a % 256 !== 0) mark(Math.floor(a / 256), code);
        if (b % 256 !== 0 && endFull >= firstFull) mark(endFull, code);
        if (hi > to16) break; // it reaches into the next /16 too
        advance();
        if (lo >= to16) break;
      }
      const whole = uniform(0, 256);
      if (whole >= 0 && whole !== MIXED) {
        top[h] = whole;
        continue;
      }
      top[h] = midLength >>> 4;
      for (let q = 0; q < 16; q++) {
        const same = uniform(q << 4, 16);
        if (same >= 0) {
          mid[midLength++] = same;
          continue;
        }
        // Sixteen /24 verdicts; identical patterns share a block.
        const key = String.fromCharCode(...cells.subarray(q << 4, (q + 1) << 4));
        let block = lowBlocks.get(key);
        if (block === undefined && lowLength < low.length) {
          block = lowLength / 16;
          lowBlocks.set(key, block);
          low.set(cells.subarray(q << 4, (q + 1) << 4), lowLength);
          lowLength += 16;
        }
        // Past the cell width the /20 goes to the interval search: slower, never wrong.
        mid[midLength++] = block === undefined ? MIXED : SUB + block;
      }
    }
    this.mid = mid.slice(0, midLength);
    this.low = low.slice(0, lowLength);
    this.top = top;
  }

  /** The traffic type of an IPv4 number by interval search (null = ask providers). */
  trafficTypeV4(ip: number): TrafficType | null {
    const o = this.overlay4.size ? this.overlay4.lookup(ip) : -1;
    if (o >= 0) {
      const kind = (this.overlays[o] as { kind: RangeKind }).kind;
      if (kind !== 'isp') return kind;
    }
    if (this.company4.size && this.company4.lookup(ip) >= 0) return 'business';
    if (o >= 0) return 'isp';
    const s = this.shipped.v4.lookup(ip);
    if (s >= 0 && (this.shipped.lists[s] as RangeList).kind === 'vpn') return 'vpn';
    const w = this.asn4.lookup(ip);
    this.verdictCodes ??= this.owners.verdictCodes();
    const owner = w < 0 ? null : (VERDICTS[this.verdictCodes[w] as number] ?? null);
    if (s >= 0 && owner !== 'vpn') return 'hosting';
    return owner;
  }

  /**
   * The local verdict, in waterfall order: imported VPN/hosting ranges, company records, imported ISP
   * ranges (the operator's data, so it overrides everything shipped); then the shipped VPN lists,
   * a VPN network owner, the shipped hosting lists (VPN before hosting: a VPN provider's servers sit
   * in datacenters, and the datacenter lists cover them too); then the network owner's class
   * (curated ASN, then name rules). A business owner without a curated domain is left to the
   * providers.
   */
  lookup(ip: ParsedIp): LocalAnswer {
    const v6 = ip.version === 6;
    const key = v6 ? groupsToBigint(ip.groups) : ip.value;
    const ownerIdx = v6 ? this.asn6.lookup(key as bigint) : this.asn4.lookup(key as number);
    const owner = ownerIdx >= 0 ? this.owners.get(ownerIdx) : null;
    const base = { asn: owner?.asn ?? null, org: owner?.name ?? null };
    const oIdx = v6 ? this.overlay6.lookup(key as bigint) : this.overlay4.lookup(key as number);
    const overlay = oIdx >= 0 ? this.overlays[oIdx] : undefined;
    if (overlay && overlay.kind !== 'isp') {
      const who = overlay.provider ? ` (${overlay.provider})` : '';
      return {
        ...base,
        traffic_type: overlay.kind,
        vpn_provider: overlay.kind === 'vpn' ? (overlay.provider ?? owner?.vpnProvider ?? owner?.name ?? null) : null,
        company: null,
        reason: overlay.kind === 'vpn' ? `The address is a known VPN exit${who}.` : `The address is in a known hosting or cloud range${who}.`,
      };
    }
    const cIdx = v6 ? this.company6.lookup(key as bigint) : this.company4.lookup(key as number);
    const company = cIdx >= 0 ? this.companies[cIdx] : undefined;
    if (company) {
      return {
        ...base,
        traffic_type: 'business',
        vpn_provider: null,
        company: { domain: company.domain, company_name: company.company_name, confidence: company.confidence, source: company.source },
        reason:
          company.source === 'learned'
            ? `A confirmed earlier identification places ${company.company_name} at this address.`
            : `The address is registered to ${company.company_name} in the imported company data.`,
      };
    }
    if (overlay) {
      return {
        ...base,
        traffic_type: 'isp',
        vpn_provider: null,
        company: null,
        reason: `The address is in a known consumer ISP range${overlay.provider ? ` (${overlay.provider})` : ''}.`,
      };
    }
    const sIdx = v6 ? this.shipped.v6.lookup(key as bigint) : this.shipped.v4.lookup(key as number);
    const list = sIdx >= 0 ? this.shipped.lists[sIdx] : undefined;
    if (list && (list.kind === 'vpn' || owner?.type !== 'vpn')) {
      const provider = list.kind === 'vpn' ? (list.provider ?? owner?.vpnProvider ?? owner?.name ?? null) : list.provider;
      return {
        ...base,
        traffic_type: list.kind,
        vpn_provider: list.kind === 'vpn' ? provider : null,
        company: null,
        reason: `The address ${list.reason}${provider ? ` (${provider})` : ''}.`,
      };
    }
    if (!owner) {
      return { ...base, traffic_type: null, vpn_provider: null, company: null, reason: 'No network owner is known for this address.' };
    }
    const name = owner.label ?? owner.name;
    switch (owner.type) {
      case 'vpn':
        return {
          ...base,
          traffic_type: 'vpn',
          vpn_provider: owner.vpnProvider ?? owner.name,
          company: null,
          reason: `The network belongs to ${name}, a VPN provider (AS${owner.asn}).`,
        };
      case 'hosting':
        return {
          ...base,
          traffic_type: 'hosting',
          vpn_provider: null,
          company: null,
          reason: `The network belongs to ${name}, a hosting or cloud provider (AS${owner.asn}).`,
        };
      case 'isp':
        return {
          ...base,
          traffic_type: 'isp',
          vpn_provider: null,
          company: null,
          reason: `The network belongs to ${name}, an internet service provider (AS${owner.asn}); it does not identify a company.`,
        };
      case 'education':
      case 'government':
        return {
          ...base,
          traffic_type: owner.type,
          vpn_provider: null,
          company: null,
          reason: `The network belongs to ${name}, ${article(owner.type)} ${owner.type} network (AS${owner.asn}).`,
        };
      case 'business':
        if (owner.domain && owner.companyName) {
          return {
            ...base,
            traffic_type: 'business',
            vpn_provider: null,
            company: { domain: owner.domain, company_name: owner.companyName, confidence: 0.95, source: 'asn' },
            reason: `The network is ${owner.companyName}'s own (AS${owner.asn}).`,
          };
        }
        break;
      default:
        break;
    }
    return { ...base, traffic_type: null, vpn_provider: null, company: null, reason: `The network belongs to ${owner.name} (AS${owner.asn}).` };
  }
}
