import companyNetworks from '../../../data/company-networks.json' with { type: 'json' };
import rules from '../../../data/ownership-rules.json' with { type: 'json' };
import type { AsnBase, LocalFacts } from '../local-data.ts';
import type { SourceAnswer, TrafficType } from '../types.ts';
import { cleanCompanyName } from './clean-company-name.ts';
import { OwnerStats } from './owner-stats.ts';

/**
 * The ownership source: the organisation that owns an address's network, as a vote. A network whose
 * owner is a company (not an ISP, mobile carrier, hosting/cloud/CDN, VPN, education or government
 * network) votes `business` with the owner's cleaned name, and with a domain only when the reviewed
 * list (packages/core/data/company-networks.json) names one: a domain is never guessed from a name.
 *
 * Naming an ISP a business charges a customer for nothing, so "company" is decided in this order:
 * 1. the local classes (LocalFacts: curated ASNs, the name rules, the shipped hosting/VPN lists) —
 *    a network they class is voted as that type;
 * 2. the reviewed company networks — voted business with their domain;
 * 3. otherwise the shape of the owner's networks, scored (packages/core/data/ownership-rules.json):
 *    how many IPv4 and IPv6 ranges and addresses the organisation announces, whether it has several
 *    ASNs, ranges in the datacenter lists, a trade word in its name, how old its ASN is. A score at
 *    the threshold votes business with the cleaned name; far below it votes isp; in between the
 *    source abstains, leaving the address to the other sources.
 *
 * Confidence: a company on ownership alone is `likely` under consensus and no more (0.65, below the
 * single-source cap); a reviewed company network a little more (0.7).
 */

export interface OwnershipOptions {
  /** The rules as data; packages/core/data/ownership-rules.json unless a test passes its own. */
  rules?: OwnershipRules;
}

export interface OwnershipRules {
  confidence: { company: number; curated_company: number; not_company: number };
  score: {
    base: number;
    no_ipv6: number;
    log_ipv6_ranges: number;
    log_ipv4_ranges: number;
    address_octets: number;
    several_asns: number;
    company_word: number;
    in_hosting_list: number;
    asn_16bit: number;
    asn_before_20000: number;
    threshold: number;
    isp_below: number;
  };
  /** A pattern (case-insensitive) of words that name a company's trade: bank, hospital, motor, … */
  company_words: string;
}

interface CompanyNetwork {
  domain: string;
  company_name: string;
  source: string;
}

const CURATED = new Map(
  Object.entries((companyNetworks as { networks: Record<string, CompanyNetwork> }).networks).map(([asn, c]) => [Number(asn), c]),
);

/** A vote remembered for one owner as the local data saw it. */
interface OwnerVote {
  org: string;
  local: TrafficType | null;
  company: unknown;
  vote: SourceAnswer | null;
}

const NON_BUSINESS = new Set<TrafficType>(['isp', 'hosting', 'vpn', 'education', 'government']);

export class OwnershipSource {
  readonly name = 'ownership';
  private readonly companyWords: RegExp;
  /**
   * Votes already made, per owner: a vote depends only on the ASN, its name, its local class and its
   * company record, never on the address, so an owner costs the name cleaning and the score (about
   * 2 µs) once, and each later address of any of its ranges one map read. (Keyed by facts object, as
   * it was, a lookup over many networks missed almost always: the offline path fell to a quarter.)
   */
  private readonly votes = new Map<number, OwnerVote[]>();
  /**
   * Per ASN row of the stats, the part of its score that does not depend on the owner's name, worked
   * out when first asked (NaN until then): the name part is added per lookup, since an ASN's row is
   * shared by every name it was registered under.
   */
  private readonly shapeScores: Float32Array;

  private constructor(
    private readonly stats: OwnerStats,
    private readonly rules: OwnershipRules,
  ) {
    this.companyWords = new RegExp(rules.company_words, 'i');
    this.shapeScores = new Float32Array(stats.size).fill(Number.NaN);
  }

  /** Built once per process from the shipped base (a few hundred milliseconds for 80,000 ASNs). */
  static fromBase(base: AsnBase, options: OwnershipOptions = {}): OwnershipSource {
    return new OwnershipSource(OwnerStats.fromBase(base, orgKey), options.rules ?? (rules as OwnershipRules));
  }

  /**
   * The vote for one address, from its local facts (LocalIpData.facts): null when the address has no
   * known owner or the owner's shape says neither company nor operator. Pure and synchronous: the
   * facts are already in memory. The vote may be shared: read it, never change it.
   */
  answer(facts: LocalFacts): SourceAnswer | null {
    const { asn, org } = facts;
    if (asn === null || org === null) return null;
    // One entry per way the local data sees the owner (an ASN's ranges may sit partly in a hosting
    // list): a handful at most, so a short scan.
    let known = this.votes.get(asn);
    if (!known) {
      known = [];
      this.votes.set(asn, known);
    }
    for (const k of known) if (k.org === org && k.local === facts.traffic_type && k.company === facts.company) return k.vote;
    const vote = this.decide(facts);
    if (vote) Object.freeze(vote);
    if (known.length < 8) known.push({ org, local: facts.traffic_type, company: facts.company, vote });
    return vote;
  }

  private decide(facts: LocalFacts): SourceAnswer | null {
    const { asn, org } = facts;
    if (asn === null || org === null) return null;
    // The owner's vote is about the network, shared by all its addresses: it names no country.
    const country = null;
    const local = facts.traffic_type;
    const confidence = this.rules.confidence;
    if (local !== null && NON_BUSINESS.has(local)) {
      return vote(local, null, null, confidence.not_company, country, `AS${asn} (${org}) is ${typePhrase(local)}`);
    }
    const curated = CURATED.get(asn);
    if (curated) {
      return vote(
        'business',
        curated.domain,
        curated.company_name,
        confidence.curated_company,
        country,
        `AS${asn} is ${curated.company_name}'s own network`,
      );
    }
    if (local === 'business' && facts.company) {
      const c = facts.company;
      return vote('business', c.domain, c.company_name, confidence.curated_company, country, `AS${asn} is ${c.company_name}'s own network`);
    }
    const name = cleanCompanyName(org);
    const score = this.score(asn, org);
    // An ASN the shipped data does not know has no shape to judge: no vote rather than a guess.
    if (score === null) return null;
    if (score < this.rules.score.isp_below) {
      return vote(
        'isp',
        null,
        null,
        confidence.not_company,
        country,
        `AS${asn} (${org}) announces address space the way an access network does, not a company`,
      );
    }
    if (name === null || score < this.rules.score.threshold) return null;
    return vote('business', null, name, confidence.company, country, `AS${asn} is owned by ${name}`);
  }

  /** The owner's company score (see ownership-rules.json); null for an ASN the data lacks. */
  score(asn: number, org: string): number | null {
    const s = this.stats;
    const r = s.row(asn);
    if (r < 0) return null;
    let shape = this.shapeScores[r] as number;
    if (Number.isNaN(shape)) {
      const w = this.rules.score;
      const g = s.org[r] as number;
      const ranges6 = s.ranges6[r] as number;
      shape =
        w.base +
        (ranges6 === 0 ? w.no_ipv6 : 0) +
        w.log_ipv6_ranges * Math.log1p(ranges6) +
        w.log_ipv4_ranges * Math.log1p(s.ranges4[r] as number) +
        (w.address_octets * Math.log2(1 + (s.orgAddresses4[g] as number))) / 8 +
        ((s.orgAsns[g] as number) > 1 ? w.several_asns : 0) +
        ((s.listed4[r] as number) > 0 ? w.in_hosting_list : 0) +
        (asn < 65536 ? w.asn_16bit : 0) +
        (asn < 20000 ? w.asn_before_20000 : 0);
      this.shapeScores[r] = shape;
    }
    return shape + (this.companyWords.test(org) ? this.rules.score.company_word : 0);
  }
}

/**
 * Organisations group by their cleaned name, in lower case. Most names have nothing to clean but
 * their capitals, so only those that show a handle, a " - " or an ASN go through the cleaning (90,000
 * names at load: a tenth of the time).
 */
const MAY_NEED_CLEANING = /\s-\s|^\S*[-_\d]\S*(\s|$)|AS\d/i;
function orgKey(name: string): string {
  return (MAY_NEED_CLEANING.test(name) ? (cleanCompanyName(name) ?? name) : name).toLowerCase();
}

const typePhrase = (t: TrafficType) =>
  t === 'isp'
    ? 'an ISP network'
    : t === 'vpn'
      ? 'a VPN network'
      : t === 'hosting'
        ? 'a hosting network'
        : `${/^[aeiou]/.test(t) ? 'an' : 'a'} ${t} network`;

function vote(
  traffic_type: TrafficType,
  domain: string | null,
  company_name: string | null,
  confidence: number,
  country_code: string | null,
  reason: string,
): SourceAnswer {
  return { provider: 'ownership', domain, company_name, traffic_type, confidence, country_code, reason };
}
