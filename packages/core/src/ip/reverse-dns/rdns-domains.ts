import shipped from '../../../data/rdns-domains.json' with { type: 'json' };

/** Who names addresses under a listed domain. Mobile carriers are ISPs to the traffic type; CDNs are hosting. */
export type RdnsDomainType = 'isp' | 'mobile' | 'hosting' | 'cdn';

export interface RdnsDomain {
  type: RdnsDomainType;
  /** The operator and the naming the entry recognises, as reviewed. */
  source: string;
}

/** The reviewed rDNS data, ready to look names up in. */
export interface RdnsDomainList {
  /** Registrable domain → its entry. */
  domains: ReadonlyMap<string, RdnsDomain>;
  /** Public suffixes of education networks (`edu`; `ac.uk`, `edu.au` by their first label). */
  education: InstitutionSuffixes;
  /** Public suffixes of government networks (`gov`, `mil`; `gov.uk`, `gouv.fr` by their first label). */
  government: InstitutionSuffixes;
}

export interface InstitutionSuffixes {
  /** One-label suffixes that count whole. */
  whole: ReadonlySet<string>;
  /** First labels of longer suffixes. */
  firstLabel: ReadonlySet<string>;
}

const TYPES: ReadonlySet<string> = new Set<RdnsDomainType>(['isp', 'mobile', 'hosting', 'cdn']);

/**
 * Builds the list from its JSON form (packages/core/data/rdns-domains.json), refusing an entry of
 * an unknown type or without a source note, so a bad edit fails at start-up, not as a wrong charge.
 */
export function rdnsDomainList(data: unknown): RdnsDomainList {
  const root = asRecord(data, 'rdns-domains');
  const domains = new Map<string, RdnsDomain>();
  for (const [domain, raw] of Object.entries(asRecord(root.domains, 'rdns-domains.domains'))) {
    const entry = asRecord(raw, `rdns-domains.domains.${domain}`);
    if (typeof entry.type !== 'string' || !TYPES.has(entry.type)) {
      throw new Error(`rdns-domains: ${domain} has type ${JSON.stringify(entry.type)}; expected one of ${[...TYPES].join(', ')}`);
    }
    if (typeof entry.source !== 'string' || entry.source.trim() === '') throw new Error(`rdns-domains: ${domain} has no source note`);
    domains.set(domain.toLowerCase(), { type: entry.type as RdnsDomainType, source: entry.source });
  }
  const institutions = asRecord(root.institution_suffixes, 'rdns-domains.institution_suffixes');
  return {
    domains,
    education: institutionSuffixes(institutions.education, 'education'),
    government: institutionSuffixes(institutions.government, 'government'),
  };
}

/** The shipped, reviewed list. */
export const SHIPPED_RDNS_DOMAINS: RdnsDomainList = rdnsDomainList(shipped);

function asRecord(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${what} must be an object`);
  return v as Record<string, unknown>;
}

function institutionSuffixes(v: unknown, what: string): InstitutionSuffixes {
  const entry = asRecord(v, `rdns-domains.institution_suffixes.${what}`);
  return { whole: labelSet(entry.whole, `${what}.whole`), firstLabel: labelSet(entry.first_label, `${what}.first_label`) };
}

function labelSet(v: unknown, what: string): Set<string> {
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string'))
    throw new Error(`rdns-domains.institution_suffixes.${what} must be a list of labels`);
  return new Set(v as string[]);
}
