import classes from '../../data/network-classes.json' with { type: 'json' };
import type { ParsedIp } from '../net/ip.ts';
import { groupsToBigint, Ipv4Index, Ipv6Index, type RangeInput } from './ranges.ts';
import type { TrafficType } from './types.ts';

/**
 * The free local layer of the waterfall, held in memory: who owns every routed address (ASN ranges
 * with organisation names), what kind of network that is (reviewed data in
 * packages/core/data/network-classes.json), imported VPN/hosting/ISP ranges and company records.
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

const ASN_CLASSES = classes.asns as Record<string, AsnClass>;
const NAME_RULES = classes.name_rules.map((r) => ({ type: r.type as TrafficType, re: new RegExp(r.pattern, 'i') }));
const KIND_PRIORITY: Record<RangeKind, number> = { vpn: 3, hosting: 2, isp: 1 };

/** The class of a network from its ASN (curated) or its organisation name (rules); null = a business. */
export function classifyNetwork(asn: number, name: string): Omit<Owner, 'asn' | 'name'> {
  const curated = ASN_CLASSES[String(asn)];
  if (curated) {
    return {
      type: curated.type,
      label: curated.label,
      vpnProvider: curated.vpn_provider ?? null,
      domain: curated.domain ?? null,
      companyName: curated.company_name ?? null,
    };
  }
  for (const rule of NAME_RULES) {
    if (rule.re.test(name)) return { type: rule.type, label: null, vpnProvider: rule.type === 'vpn' ? name : null, domain: null, companyName: null };
  }
  return { type: null, label: null, vpnProvider: null, domain: null, companyName: null };
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

const article = (t: string) => (/^[aeiou]/.test(t) ? 'an' : 'a');

export class LocalIpData {
  private constructor(
    private readonly owners: Owner[],
    private readonly asn4: Ipv4Index,
    private readonly asn6: Ipv6Index,
    private readonly overlays: { kind: RangeKind; provider: string | null }[],
    private readonly overlay4: Ipv4Index,
    private readonly overlay6: Ipv6Index,
    private readonly companies: CompanyRow<number | bigint>[],
    private readonly company4: Ipv4Index,
    private readonly company6: Ipv6Index,
  ) {}

  /**
   * A copy with new imported layers (VPN/hosting/ISP ranges, company records) over the same network
   * owners, so a reload after an import or a learned record does not rebuild the ASN index.
   */
  withLayers(layers: Omit<LocalLayers, 'asn4' | 'asn6'>): LocalIpData {
    const next = LocalIpData.build({ asn4: [], asn6: [], ...layers });
    return new LocalIpData(this.owners, this.asn4, this.asn6, next.overlays, next.overlay4, next.overlay6, next.companies, next.company4, next.company6);
  }

  /**
   * From a prebuilt network-owner base (the host fills typed arrays straight from the shipped CSV,
   * allocating no row objects) plus the imported layers.
   */
  static fromBase(
    base: { owners: { asn: number; name: string }[]; asn4: Ipv4Index; asn6: Ipv6Index },
    layers: Omit<LocalLayers, 'asn4' | 'asn6'> = {},
  ): LocalIpData {
    const owners = base.owners.map((o) => ({ ...o, ...classifyNetwork(o.asn, o.name) }));
    const empty = LocalIpData.build({ asn4: [], asn6: [] });
    return new LocalIpData(owners, base.asn4, base.asn6, empty.overlays, empty.overlay4, empty.overlay6, empty.companies, empty.company4, empty.company6).withLayers(layers);
  }

  static build(input: LocalLayers): LocalIpData {
    const owners: Owner[] = [];
    const ownerOf = new Map<string, number>();
    const owner = (asn: number, name: string) => {
      const key = `${asn}|${name}`;
      let i = ownerOf.get(key);
      if (i === undefined) {
        i = owners.length;
        owners.push({ asn, name, ...classifyNetwork(asn, name) });
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
    return new LocalIpData(owners, asn4, asn6, overlays, overlay4, overlay6, companies, company4, company6);
  }

  get stats() {
    return {
      asnSegments: this.asn4.size + this.asn6.size,
      overlaySegments: this.overlay4.size + this.overlay6.size,
      companySegments: this.company4.size + this.company6.size,
    };
  }

  /** Per owner, the local verdict as an index into VERDICTS (0 = ask the providers). */
  private verdictCodes: Uint8Array | undefined;

  /** The hot path: the traffic type of an IPv4 number from the local data (null = ask providers). */
  trafficTypeV4(ip: number): TrafficType | null {
    const o = this.overlay4.size ? this.overlay4.lookup(ip) : -1;
    if (o >= 0) {
      const kind = (this.overlays[o] as { kind: RangeKind }).kind;
      if (kind !== 'isp') return kind;
    }
    if (this.company4.size && this.company4.lookup(ip) >= 0) return 'business';
    if (o >= 0) return 'isp';
    const w = this.asn4.lookup(ip);
    if (w < 0) return null;
    const codes = (this.verdictCodes ??= Uint8Array.from(this.owners, (ow) =>
      ow.type === null || (ow.type === 'business' && !ow.domain) ? 0 : VERDICTS.indexOf(ow.type),
    ));
    return VERDICTS[codes[w] as number] ?? null;
  }

  /**
   * The local verdict, in waterfall order: imported VPN/hosting ranges, company records, imported ISP
   * ranges, then the network owner's class (curated ASN, then name rules). A business owner without a
   * curated domain is left to the providers.
   */
  lookup(ip: ParsedIp): LocalAnswer {
    const v6 = ip.version === 6;
    const key = v6 ? groupsToBigint(ip.groups) : ip.value;
    const ownerIdx = v6 ? this.asn6.lookup(key as bigint) : this.asn4.lookup(key as number);
    const owner = ownerIdx >= 0 ? (this.owners[ownerIdx] as Owner) : null;
    const base = { asn: owner?.asn ?? null, org: owner?.name ?? null };
    const oIdx = v6 ? this.overlay6.lookup(key as bigint) : this.overlay4.lookup(key as number);
    const overlay = oIdx >= 0 ? this.overlays[oIdx] : undefined;
    if (overlay && overlay.kind !== 'isp') {
      const who = overlay.provider ? ` (${overlay.provider})` : '';
      return {
        ...base,
        traffic_type: overlay.kind,
        vpn_provider: overlay.kind === 'vpn' ? (overlay.provider ?? owner?.name ?? null) : null,
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
      return { ...base, traffic_type: 'isp', vpn_provider: null, company: null, reason: `The address is in a known consumer ISP range${overlay.provider ? ` (${overlay.provider})` : ''}.` };
    }
    if (!owner) {
      return { ...base, traffic_type: null, vpn_provider: null, company: null, reason: 'No network owner is known for this address.' };
    }
    const name = owner.label ?? owner.name;
    switch (owner.type) {
      case 'vpn':
        return { ...base, traffic_type: 'vpn', vpn_provider: owner.vpnProvider ?? owner.name, company: null, reason: `The network belongs to ${name}, a VPN provider (AS${owner.asn}).` };
      case 'hosting':
        return { ...base, traffic_type: 'hosting', vpn_provider: null, company: null, reason: `The network belongs to ${name}, a hosting or cloud provider (AS${owner.asn}).` };
      case 'isp':
        return { ...base, traffic_type: 'isp', vpn_provider: null, company: null, reason: `The network belongs to ${name}, an internet service provider (AS${owner.asn}); it does not identify a company.` };
      case 'education':
      case 'government':
        return { ...base, traffic_type: owner.type, vpn_provider: null, company: null, reason: `The network belongs to ${name}, ${article(owner.type)} ${owner.type} network (AS${owner.asn}).` };
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
