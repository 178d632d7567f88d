import classes from '../../data/network-classes.json' with { type: 'json' };
import { groupsToBigint, ipv4ToNumber, type ParsedIp, parseIp } from '../kernel/net/ip.ts';
import type { CountryTable } from './country.ts';
import { Ipv4Facts } from './ipv4-facts.ts';
import { Ipv4Index, Ipv6Index, type RangeInput } from './ranges.ts';
import type { SourceAnswer, TrafficType } from './types.ts';

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

/**
 * A local answer with the address's country (ISO code; null when the country data has none) and,
 * when the data was loaded with an owner judge (the ownership source), that judge's vote on the
 * address's network owner: null for no vote, undefined when the data has no judge.
 */
export interface LocalFacts extends LocalAnswer {
  country_code: string | null;
  owner_vote: SourceAnswer | null | undefined;
}

/**
 * Who votes on a network's owner from its local facts (ip/ownership). The vote depends on the facts
 * alone, so the data asks once per combination of shipped facts, when it first makes their answer,
 * and a lookup reads the vote with the answer: the offline path then costs what the facts cost (a
 * vote remembered per owner in a map, or per answer in a WeakMap, cut it to a quarter or a half).
 */
export interface OwnerJudge {
  answer(facts: LocalFacts): SourceAnswer | null;
}

/** Every answer is made here, so all have one shape (one hidden class for the engine). */
function localFacts(
  traffic_type: TrafficType | null,
  asn: number | null,
  org: string | null,
  vpn_provider: string | null,
  company: LocalAnswer['company'],
  reason: string,
  country_code: string | null,
): LocalFacts {
  return { traffic_type, asn, org, vpn_provider, company, reason, country_code, owner_vote: undefined };
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

/** The curated classes in a list, so an owner refers to its own by a two-byte index. */
const CURATED = [...ASN_CLASSES.values()];
const CURATED_INDEX = new Map([...ASN_CLASSES.keys()].map((asn, i) => [asn, i]));

/**
 * The network owners, column by column: an ASN, a name, a one-byte class, a two-byte reference to
 * its curated entry and the verdict its class gives each. As objects, the 90,000 owners took a
 * third of the loaded heap, and building them churned the young generation up to its largest size,
 * which the process then keeps. A lookup reads the columns; it makes no owner object.
 */
class Owners {
  /** Per owner, its class as an index into VERDICTS, worked out at load (the name rules run once). */
  private readonly types: Uint8Array;
  /** Per owner, 1 + the index of its curated entry in CURATED, or 0. */
  private readonly curated: Uint16Array;
  /** Per owner, the verdict its class gives (index into VERDICTS): none for an uncurated business. */
  private readonly verdicts: Uint8Array;
  /** Per owner, the reason its class gives, made when first asked for (up to 7 MB made at load otherwise). */
  private readonly reasons: (string | undefined)[];

  constructor(
    readonly asns: Int32Array,
    readonly names: string[],
  ) {
    if (CURATED.length >= 0xffff) throw new Error('too many curated ASNs for the owner columns');
    this.types = new Uint8Array(names.length);
    this.curated = new Uint16Array(names.length);
    this.verdicts = new Uint8Array(names.length);
    this.reasons = new Array(names.length);
    for (let i = 0; i < names.length; i++) {
      const asn = asns[i] as number;
      const type = classOf(asn, names[i] as string);
      const curated = ASN_CLASSES.get(asn);
      this.types[i] = VERDICTS.indexOf(type);
      this.curated[i] = (CURATED_INDEX.get(asn) ?? -1) + 1;
      this.verdicts[i] = VERDICTS.indexOf(ownVerdict(type, curated));
    }
  }

  type(i: number): TrafficType | null {
    return VERDICTS[this.types[i] as number] ?? null;
  }

  /** The verdict the owner's class gives on its own: null leaves the address to the providers. */
  verdict(i: number): TrafficType | null {
    return VERDICTS[this.verdicts[i] as number] ?? null;
  }

  /** The reason of the answer the owner's class gives on its own. */
  reason(i: number): string {
    let reason = this.reasons[i];
    if (reason === undefined) {
      const asn = this.asns[i] as number;
      const org = this.names[i] as string;
      const curated = this.curatedOf(i);
      reason = ownReason(this.verdict(i), curated?.label ?? org, org, asn, curated);
      this.reasons[i] = reason;
    }
    return reason;
  }

  curatedOf(i: number): AsnClass | undefined {
    const c = this.curated[i] as number;
    return c === 0 ? undefined : CURATED[c - 1];
  }

  /** The company an owner curated with its domain is (one shared object per curated entry). */
  company(i: number): LocalAnswer['company'] {
    const c = this.curated[i] as number;
    return c === 0 ? null : (CURATED_COMPANIES[c - 1] ?? null);
  }

  /** Who runs the owner's VPN, as describeOwner says. */
  vpnProvider(i: number): string | null {
    const curated = this.curatedOf(i);
    if (curated) return curated.vpn_provider ?? null;
    return this.type(i) === 'vpn' ? (this.names[i] as string) : null;
  }
}

/** What an owner's class says on its own: a business is answered only when curated with its domain. */
function ownVerdict(type: TrafficType | null, curated: AsnClass | undefined): TrafficType | null {
  if (type === 'business') return curated?.domain && curated.company_name ? 'business' : null;
  return type === 'unknown' ? null : type;
}

/** The reason of an owner's own verdict; `name` is its curated label or its organisation. */
function ownReason(verdict: TrafficType | null, name: string, org: string, asn: number, curated: AsnClass | undefined): string {
  switch (verdict) {
    case 'vpn':
      return `The network belongs to ${name}, a VPN provider (AS${asn}).`;
    case 'hosting':
      return `The network belongs to ${name}, a hosting or cloud provider (AS${asn}).`;
    case 'isp':
      return `The network belongs to ${name}, an internet service provider (AS${asn}); it does not identify a company.`;
    case 'education':
    case 'government':
      return `The network belongs to ${name}, ${article(verdict)} ${verdict} network (AS${asn}).`;
    case 'business':
      return `The network is ${curated?.company_name}'s own (AS${asn}).`;
    default:
      return `The network belongs to ${org} (AS${asn}).`;
  }
}

/** Per curated entry, the company its network is (null unless curated with a domain). */
const CURATED_COMPANIES: LocalAnswer['company'][] = CURATED.map((c) =>
  c.type === 'business' && c.domain && c.company_name
    ? Object.freeze({ domain: c.domain, company_name: c.company_name, confidence: 0.95, source: 'asn' as const })
    : null,
);

export interface LocalLayers {
  asn4: AsnRow<number>[];
  asn6: AsnRow<bigint>[];
  overlays4?: OverlayRow<number>[];
  overlays6?: OverlayRow<bigint>[];
  companies4?: CompanyRow<number>[];
  companies6?: CompanyRow<bigint>[];
}

const VERDICTS: (TrafficType | null)[] = [null, 'business', 'isp', 'hosting', 'vpn', 'education', 'government', 'unknown'];

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
  /**
   * The country of each IPv4 address, from the shipped country database (absent in a base made
   * without it: the caller's country lookup then answers, as it does for IPv6).
   */
  country?: CountryTable;
}

const NO_SHIPPED_RANGES: ShippedRanges = { lists: [], v4: Ipv4Index.build([]), v6: Ipv6Index.build([]) };
const NO_RANGES_V4 = Ipv4Index.build([]);

const article = (t: string) => (/^[aeiou]/.test(t) ? 'an' : 'a');

/** The imported layers' indexes: VPN/hosting/ISP ranges (the narrowest wins, then the kind), company records (imported before learned). */
function importedLayers(input: Omit<LocalLayers, 'asn4' | 'asn6'>): ImportedLayers {
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
  return { overlays, overlay4, overlay6, companies, company4, company6 };
}

interface ImportedLayers {
  overlays: { kind: RangeKind; provider: string | null }[];
  overlay4: Ipv4Index;
  overlay6: Ipv6Index;
  companies: CompanyRow<number | bigint>[];
  company4: Ipv4Index;
  company6: Ipv6Index;
}

export class LocalIpData {
  private constructor(
    private readonly owners: Owners,
    /**
     * The owner, shipped list and country of each IPv4 address in one table (see `facts`): IPv4
     * keeps no other index of the shipped data.
     */
    private readonly facts4: Ipv4Facts,
    private readonly asn6: Ipv6Index,
    private readonly shippedLists: RangeList[],
    private readonly shipped6: Ipv6Index,
    /** What facts4's country values index; null when the base had no country table. */
    private readonly countryCodes: string[] | null,
    /**
     * Per combination of shipped facts (facts4), its answer once an address asked for it: shared
     * and frozen, since the answer is the same for every address with those facts and nothing
     * imported over them. At most one per combination (110,000 of about 90 bytes, besides their
     * owners' reasons and votes, made once each); shared by the copies withLayers makes. (Making
     * them all at load, in combination order for locality, measured no faster on lookups, and cost
     * half a second and about 30 MB of heap at load with the ownership judge.)
     */
    private readonly answers4: (LocalFacts | undefined)[],
    layers: ImportedLayers,
    /** The owner judge (OwnerJudge); answers4 is only shared between copies with the same one. */
    private readonly judge: OwnerJudge | null,
  ) {
    // Kept as fields of their own, not behind `layers`: every lookup reads them.
    this.overlays = layers.overlays;
    this.overlay4 = layers.overlay4;
    this.overlay6 = layers.overlay6;
    this.companies = layers.companies;
    this.company4 = layers.company4;
    this.company6 = layers.company6;
    this.listReasons = shippedLists.map((list) =>
      list.kind === 'vpn' && !list.provider ? null : `The address ${list.reason}${list.provider ? ` (${list.provider})` : ''}.`,
    );
  }

  /** Per shipped list, the reason of its answers, when it does not depend on the network owner. */
  private readonly listReasons: (string | null)[];
  private readonly overlays: ImportedLayers['overlays'];
  private readonly overlay4: Ipv4Index;
  private readonly overlay6: Ipv6Index;
  private readonly companies: ImportedLayers['companies'];
  private readonly company4: Ipv4Index;
  private readonly company6: Ipv6Index;

  /**
   * A copy with new imported layers (VPN/hosting/ISP ranges, company records) over the same network
   * owners, shipped range lists and countries, so a reload after an import or a learned record
   * rebuilds none of them.
   */
  withLayers(layers: Omit<LocalLayers, 'asn4' | 'asn6'>): LocalIpData {
    return new LocalIpData(
      this.owners,
      this.facts4,
      this.asn6,
      this.shippedLists,
      this.shipped6,
      this.countryCodes,
      this.answers4,
      importedLayers(layers),
      this.judge,
    );
  }

  /**
   * From a prebuilt base (the host fills typed arrays straight from the shipped files, allocating
   * no row objects) plus the imported layers. Merges the owner, range-list and country tables of
   * IPv4 into one (about a tenth of a second, once per process).
   */
  static fromBase(base: AsnBase, layers: Omit<LocalLayers, 'asn4' | 'asn6'> = {}, judge: OwnerJudge | null = null): LocalIpData {
    const owners = new Owners(base.owners.asns, base.owners.names);
    const shipped = base.ranges ?? NO_SHIPPED_RANGES;
    const facts4 = Ipv4Facts.merge(base.asn4, shipped.v4, base.country?.v4 ?? NO_RANGES_V4);
    return new LocalIpData(
      owners,
      facts4,
      base.asn6,
      shipped.lists,
      shipped.v6,
      base.country?.codes ?? null,
      new Array(facts4.comboCount),
      importedLayers(layers),
      judge,
    );
  }

  /** From rows (tests): no shipped lists, no countries. */
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
    const owners = new Owners(Int32Array.from(asns), names);
    const facts4 = Ipv4Facts.merge(asn4, NO_RANGES_V4, NO_RANGES_V4);
    return new LocalIpData(owners, facts4, asn6, [], NO_SHIPPED_RANGES.v6, null, [], importedLayers(input), null);
  }

  get stats() {
    return {
      ipv4Ranges: this.facts4.size,
      ipv6AsnSegments: this.asn6.size,
      ipv6ShippedRangeSegments: this.shipped6.size,
      overlaySegments: this.overlay4.size + this.overlay6.size,
      companySegments: this.company4.size + this.company6.size,
    };
  }

  /**
   * What ip-to-company and the tracker identifications look up on a cache miss: an address's local
   * answer and its country, from the address as text; null when it is not an address. IPv4 takes
   * one path: the parse, one search of the merged owner/list/country table, the imported layers'
   * searches only when something was imported, and the answer kept for that combination of facts
   * (made on its first use). IPv6 (and IPv4 when the base had no country table) takes the general
   * path and asks `countryOf`, the country database's reader. An answer may be shared: read it,
   * never change it. tests/ip-facts.test.ts holds this to what the interval searches and the reader
   * answered before.
   */
  facts(ip: string, countryOf: (ip: string) => string | null): LocalFacts | null {
    const v4 = ipv4ToNumber(ip);
    if (v4 < 0) {
      const parsed = parseIp(ip);
      return parsed ? this.lookup(parsed, countryOf(ip)) : null;
    }
    if (!this.countryCodes) return this.lookupV4(v4, countryOf(ip));
    const c = this.facts4.find(v4);
    if (this.overlay4.size || this.company4.size) {
      const overlay = this.overlay4.size ? this.overlay4.lookup(v4) : -1;
      const company = this.company4.size ? this.company4.lookup(v4) : -1;
      if (overlay >= 0 || company >= 0) return this.answer(this.facts4.owner(c), overlay, company, this.facts4.list(c), this.countryOf4(c));
    }
    return this.answers4[c] ?? this.rememberAnswer(c);
  }

  /** The country of a combination of facts4 (countryCodes is there: its caller checked). */
  private countryOf4(c: number): string | null {
    const code = this.facts4.country(c);
    return code < 0 ? null : ((this.countryCodes as string[])[code] as string);
  }

  /** Makes, keeps and returns the answer of a combination of shipped facts with nothing imported over it. */
  private rememberAnswer(c: number): LocalFacts {
    const answer = this.answer(this.facts4.owner(c), -1, -1, this.facts4.list(c), this.countryOf4(c));
    this.answers4[c] = Object.freeze(answer);
    return answer;
  }

  /** The local verdict of a parsed address, either family; `country` is passed through to the answer. */
  lookup(ip: ParsedIp, country: string | null = null): LocalFacts {
    if (ip.version === 4) return this.lookupV4(ip.value, country);
    const key = groupsToBigint(ip.groups);
    return this.answer(this.asn6.lookup(key), this.overlay6.lookup(key), this.company6.lookup(key), this.shipped6.lookup(key), country);
  }

  private lookupV4(ip: number, country: string | null): LocalFacts {
    const c = this.facts4.find(ip);
    return this.answer(this.facts4.owner(c), this.overlay4.lookup(ip), this.company4.lookup(ip), this.facts4.list(c), country);
  }

  /** The local verdict (classify) with the owner judge's vote on it. */
  private answer(ownerIdx: number, overlayIdx: number, companyIdx: number, listIdx: number, country: string | null): LocalFacts {
    const facts = this.classify(ownerIdx, overlayIdx, companyIdx, listIdx, country);
    if (this.judge) facts.owner_vote = this.judge.answer(facts);
    return facts;
  }

  /**
   * The local verdict from what each index holds at the address (-1: nothing), in waterfall order:
   * imported VPN/hosting ranges, company records, imported ISP ranges (the operator's data, so it
   * overrides everything shipped); then the shipped VPN lists, a VPN network owner, the shipped
   * hosting lists (VPN before hosting: a VPN provider's servers sit in datacenters, and the
   * datacenter lists cover them too); then the network owner's class (curated ASN, then name rules).
   * A business owner without a curated domain is left to the providers.
   */
  private classify(ownerIdx: number, overlayIdx: number, companyIdx: number, listIdx: number, country: string | null): LocalFacts {
    const owners = this.owners;
    const hasOwner = ownerIdx >= 0;
    const asn = hasOwner ? (owners.asns[ownerIdx] as number) : null;
    const org = hasOwner ? (owners.names[ownerIdx] as string) : null;
    const overlay = overlayIdx >= 0 ? this.overlays[overlayIdx] : undefined;
    if (overlay && overlay.kind !== 'isp') {
      const who = overlay.provider ? ` (${overlay.provider})` : '';
      if (overlay.kind === 'vpn') {
        const provider = overlay.provider ?? (hasOwner ? (owners.vpnProvider(ownerIdx) ?? org) : null);
        return localFacts('vpn', asn, org, provider, null, `The address is a known VPN exit${who}.`, country);
      }
      return localFacts(overlay.kind, asn, org, null, null, `The address is in a known hosting or cloud range${who}.`, country);
    }
    const company = companyIdx >= 0 ? this.companies[companyIdx] : undefined;
    if (company) {
      return localFacts(
        'business',
        asn,
        org,
        null,
        { domain: company.domain, company_name: company.company_name, confidence: company.confidence, source: company.source },
        company.source === 'learned'
          ? `A confirmed earlier identification places ${company.company_name} at this address.`
          : `The address is registered to ${company.company_name} in the imported company data.`,
        country,
      );
    }
    if (overlay) {
      const who = overlay.provider ? ` (${overlay.provider})` : '';
      return localFacts('isp', asn, org, null, null, `The address is in a known consumer ISP range${who}.`, country);
    }
    const type = hasOwner ? owners.type(ownerIdx) : null;
    const list = listIdx >= 0 ? this.shippedLists[listIdx] : undefined;
    if (list && (list.kind === 'vpn' || type !== 'vpn')) {
      const provider = list.kind === 'vpn' ? (list.provider ?? (hasOwner ? (owners.vpnProvider(ownerIdx) ?? org) : null)) : list.provider;
      const reason = this.listReasons[listIdx] ?? `The address ${list.reason}${provider ? ` (${provider})` : ''}.`;
      return localFacts(list.kind, asn, org, list.kind === 'vpn' ? provider : null, null, reason, country);
    }
    if (!hasOwner) return localFacts(null, null, null, null, null, 'No network owner is known for this address.', country);
    const verdict = owners.verdict(ownerIdx);
    return localFacts(
      verdict,
      asn,
      org,
      verdict === 'vpn' ? (owners.vpnProvider(ownerIdx) ?? org) : null,
      verdict === 'business' ? owners.company(ownerIdx) : null,
      owners.reason(ownerIdx),
      country,
    );
  }
}
