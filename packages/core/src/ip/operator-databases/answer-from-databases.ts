/**
 * One vendor's databases for one address → one vote (a SourceAnswer), or none.
 *
 * Files of one vendor combine first (the first file in IP_DATABASES order that gives a field wins it;
 * anonymizer flags add up), because MaxMind's Domain file alone cannot tell a company's domain from a
 * carrier's, and its Connection-Type file alone cannot name anyone.
 *
 * The traffic type, from the first rule that applies (its confidence is the answer's):
 * 1. an anonymizer flag: VPN, Tor exit node, public or residential proxy → `vpn`; hosting provider
 *    alone → `hosting`; `is_anonymous` alone → `vpn`.
 * 2. `user_type` (GeoIP2-Enterprise), through USER_TYPE_TRAFFIC.
 * 3. a mobile country code (the address is a mobile carrier's) → `isp`.
 * 4. `connection_type`, through CONNECTION_TRAFFIC: Corporate is a business line, the others are
 *    access networks (a business on Cable/DSL is not told apart from a household, so it stays `isp`).
 * 5. when no organisation distinct from the carrier is named: the composition's verdict on the
 *    network's owner (`ownerTraffic`, the ownership source's classification of the AS), else the
 *    composition's verdict on the domain (`domainTraffic`, the reviewed list of carriers' and hosts'
 *    domains).
 *
 * Who is named, only when the traffic is `business` or unclassified:
 * - the organisation, when it is distinct from the carrier (neither the ISP nor the AS owner by name):
 *   a block the carrier reassigned to its customer;
 * - else the carrier itself, only when `ownerTraffic` says its network is a business's (a company
 *   with its own network, where GeoIP2 writes the company as ISP and organisation alike);
 * - the domain (GeoIP2 `domain`, else IPinfo's `as_domain` of a business network), unless it is the
 *   carrier's by name or `domainTraffic` calls it a carrier's or a host's.
 * Nothing is named for isp, hosting, vpn, education or government traffic (the reason says who).
 *
 * An unclassified answer leaves traffic_type null ("no view"); its lower confidence keeps a lone
 * database from identifying alone in consensus while it still corroborates another source.
 */
import { getDomainWithoutSuffix } from 'tldts';
import type { SourceAnswer, TrafficType } from '../types.ts';
import type { OperatorDatabaseKindInfo, OperatorDatabaseVendor } from './detect-database-kind.ts';
import { type AnonymizerFlag, type DatabaseFacts, hasFacts } from './read-database-record.ts';

/** GeoIP2 `user_type` (MaxMind's documented values) → our TrafficType. */
export const USER_TYPE_TRAFFIC: Readonly<Record<string, TrafficType>> = {
  business: 'business',
  // Public access points: the visitor is the cafe's, library's or hotel's guest, not its staff.
  cafe: 'isp',
  traveler: 'isp',
  library: 'education',
  college: 'education',
  school: 'education',
  government: 'government',
  military: 'government',
  hosting: 'hosting',
  content_delivery_network: 'hosting',
  // A crawler is automated traffic from a data centre, never a company's visitor.
  search_engine_spider: 'hosting',
  residential: 'isp',
  cellular: 'isp',
  dialup: 'isp',
  router: 'isp',
};

/** GeoIP2 `connection_type` → our TrafficType. */
export const CONNECTION_TRAFFIC: Readonly<Record<string, TrafficType>> = {
  Corporate: 'business',
  'Cable/DSL': 'isp',
  Cellular: 'isp',
  Dialup: 'isp',
  Satellite: 'isp',
};

/**
 * Each rule's own confidence in its claim. A named anonymizer is MaxMind's most direct claim. What
 * nobody classified is a hint: an organisation distinct from its carrier (0.45) or a domain alone
 * (0.35) stay below consensus's `likely` (0.5) on their own, so they corroborate another source's
 * company but never charge for one alone (a small ISP reassigned a block by its upstream looks just
 * like a business customer in the ISP database).
 */
export const OPERATOR_DATABASE_CONFIDENCE = {
  anonymizer: 0.9,
  userType: 0.8,
  mobile: 0.8,
  connectionType: 0.6,
  owner: 0.6,
  domainList: 0.6,
  namedOrganisation: 0.45,
  domainOnly: 0.35,
} as const;

/** The composition's classifiers from the other free sources; either may be absent. */
export interface OperatorDatabaseOptions {
  /** The ownership source's verdict on a routing network's owner (null: no view). */
  ownerTraffic?: ((owner: { asn: number | null; name: string | null }) => TrafficType | null) | undefined;
  /** The reviewed carriers'/hosts' domain list's verdict on a registrable domain (null: not listed). */
  domainTraffic?: ((domain: string) => TrafficType | null) | undefined;
}

/** One database's facts for the address, with the product it came from. */
export interface DatabaseHit {
  kind: OperatorDatabaseKindInfo;
  facts: DatabaseFacts;
}

const VENDOR_NAME: Record<OperatorDatabaseVendor, string> = { maxmind: 'MaxMind', 'ipinfo-lite': 'IPinfo' };
const VPN_FLAGS: readonly AnonymizerFlag[] = ['VPN', 'Tor exit node', 'public proxy', 'residential proxy'];

interface Verdict {
  type: TrafficType | null;
  confidence: number;
  because: string;
}

/** One vendor's hits (all of one vendor, in IP_DATABASES order) → its answer, or null when it has nothing to say. */
export function answerFromDatabases(
  vendor: OperatorDatabaseVendor,
  all: readonly DatabaseHit[],
  opts: OperatorDatabaseOptions = {},
): SourceAnswer | null {
  const hits = all.filter((h) => hasFacts(h.facts));
  if (hits.length === 0) return null;
  const f = combineFacts(hits.map((h) => h.facts));
  const carrier = f.isp ?? f.asOrganisation;
  const distinctOrganisation = f.organisation !== null && !sameFamily(f.organisation, f.isp) && !sameFamily(f.organisation, f.asOrganisation);
  const ownerVerdict = carrier !== null || f.asn !== null ? (opts.ownerTraffic?.({ asn: f.asn, name: carrier }) ?? null) : null;
  const listedDomain = f.domain !== null ? (opts.domainTraffic?.(f.domain) ?? null) : null;

  const verdict = classify(f, distinctOrganisation, ownerVerdict, listedDomain);
  let companyName: string | null = null;
  let domain: string | null = null;
  if (verdict.type === null || verdict.type === 'business') {
    // A company with its own network: GeoIP2 writes it as ISP and organisation alike.
    const companyIsCarrier = !distinctOrganisation && ownerVerdict === 'business';
    if (distinctOrganisation) companyName = f.organisation;
    else if (companyIsCarrier) companyName = carrier ?? f.organisation;
    const candidate = f.domain ?? (companyIsCarrier ? f.asDomain : null);
    const carriersDomain =
      candidate !== null &&
      ((listedDomain !== null && listedDomain !== 'business') || (!companyIsCarrier && domainOfFamily(candidate, [f.isp, f.asOrganisation])));
    if (candidate !== null && !carriersDomain) domain = candidate;
  }

  const products = [...new Set(hits.map((h) => h.kind.product))].join(', ');
  const source = `${VENDOR_NAME[vendor]} (${products})`;
  if (verdict.type === null) {
    if (companyName === null && domain === null) return null;
    const confidence = companyName !== null ? OPERATOR_DATABASE_CONFIDENCE.namedOrganisation : OPERATOR_DATABASE_CONFIDENCE.domainOnly;
    const on = carrier !== null && companyName !== null && companyName !== carrier ? ` on the network of ${carrier}` : '';
    return answer(vendor, f, {
      domain,
      companyName,
      type: null,
      confidence,
      reason: `${source}: ${whoClause(companyName, domain)}${on}, traffic not classified`,
    });
  }
  let of = '';
  if (verdict.type === 'business') of = companyName !== null || domain !== null ? ` of ${whoClause(companyName, domain)}` : '';
  else if (f.organisation ?? carrier) of = ` of ${f.organisation ?? carrier}`;
  return answer(vendor, f, {
    domain,
    companyName,
    type: verdict.type,
    confidence: verdict.confidence,
    reason: `${source}: ${TYPE_WORDS[verdict.type]}${of} (${verdict.because})`,
  });
}

const TYPE_WORDS: Record<TrafficType, string> = {
  business: 'business traffic',
  isp: 'an ISP or mobile network',
  hosting: 'a hosting network',
  vpn: 'a VPN or proxy',
  education: 'an education network',
  government: 'a government network',
  unknown: 'unknown traffic',
};

function classify(f: DatabaseFacts, distinctOrganisation: boolean, ownerVerdict: TrafficType | null, listedDomain: TrafficType | null): Verdict {
  const c = OPERATOR_DATABASE_CONFIDENCE;
  const flags = f.anonymizer;
  if (flags.some((flag) => VPN_FLAGS.includes(flag)))
    return { type: 'vpn', confidence: c.anonymizer, because: flags.filter((x) => x !== 'anonymous').join(', ') };
  if (flags.includes('hosting provider')) return { type: 'hosting', confidence: c.anonymizer, because: 'hosting provider' };
  if (flags.includes('anonymous')) return { type: 'vpn', confidence: c.anonymizer, because: 'anonymous' };
  const userType = f.userType !== null && Object.hasOwn(USER_TYPE_TRAFFIC, f.userType) ? USER_TYPE_TRAFFIC[f.userType] : undefined;
  if (userType) return { type: userType, confidence: c.userType, because: `user_type ${f.userType}` };
  if (f.mobileCountryCode !== null) return { type: 'isp', confidence: c.mobile, because: `mobile network, MCC ${f.mobileCountryCode}` };
  const connection =
    f.connectionType !== null && Object.hasOwn(CONNECTION_TRAFFIC, f.connectionType) ? CONNECTION_TRAFFIC[f.connectionType] : undefined;
  if (connection) return { type: connection, confidence: c.connectionType, because: `connection_type ${f.connectionType}` };
  if (!distinctOrganisation) {
    if (ownerVerdict !== null && ownerVerdict !== 'unknown')
      return { type: ownerVerdict, confidence: c.owner, because: 'the network owner’s classification' };
    if (listedDomain !== null && listedDomain !== 'unknown' && listedDomain !== 'business') {
      return { type: listedDomain, confidence: c.domainList, because: `domain ${f.domain} is a listed network domain` };
    }
  }
  return { type: null, confidence: 0, because: '' };
}

function answer(
  vendor: OperatorDatabaseVendor,
  f: DatabaseFacts,
  a: { domain: string | null; companyName: string | null; type: TrafficType | null; confidence: number; reason: string },
): SourceAnswer {
  return {
    provider: vendor,
    domain: a.domain,
    company_name: a.companyName,
    traffic_type: a.type,
    confidence: a.confidence,
    country_code: f.country,
    reason: a.reason,
  };
}

function whoClause(companyName: string | null, domain: string | null): string {
  if (companyName !== null && domain !== null) return `${companyName}, ${domain}`;
  return companyName ?? `domain ${domain}`;
}

/** The first file that gives a field wins it; anonymizer flags from every file add up. */
export function combineFacts(all: readonly DatabaseFacts[]): DatabaseFacts {
  const first = <K extends keyof DatabaseFacts>(key: K): DatabaseFacts[K] | null => {
    for (const f of all) if (f[key] !== null) return f[key];
    return null;
  };
  return {
    organisation: first('organisation'),
    isp: first('isp'),
    asn: first('asn'),
    asOrganisation: first('asOrganisation'),
    asDomain: first('asDomain'),
    domain: first('domain'),
    userType: first('userType'),
    connectionType: first('connectionType'),
    mobileCountryCode: first('mobileCountryCode'),
    anonymizer: [...new Set(all.flatMap((f) => f.anonymizer))],
    country: first('country'),
  };
}

// Words that name what a network is, not whose: two names sharing only these are not one family.
const GENERIC = new Set(
  (
    'the and inc llc ltd limited corp corporation company group gmbh ab sa sas srl bv plc pty national international global american ' +
    'united first network networks communications communication telecom telecommunications internet services service broadband online data net us'
  ).split(' '),
);

function words(name: string): string[] {
  return name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[&'’.]/g, '')
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
}

/** The first word of a name that says whose it is (three letters or more, not generic). */
function distinctiveWord(name: string): string | null {
  return words(name).find((w) => w.length >= 3 && !GENERIC.has(w)) ?? null;
}

/**
 * Whether two organisation names are one family ("Verizon Wireless" and "Verizon Business", "AT&T
 * Services" and "AT&T Worldnet Services"): equal letters, one inside the other, or the same first
 * distinctive word. A heuristic over free-text names, tilted to "same" so a carrier's own name is
 * never taken for its customer's.
 */
export function sameFamily(a: string | null, b: string | null): boolean {
  if (a === null || b === null) return false;
  const x = words(a).join('');
  const y = words(b).join('');
  if (x === '' || y === '') return false;
  if (x === y || x.includes(y) || y.includes(x)) return true;
  const wa = distinctiveWord(a);
  return wa !== null && wa === distinctiveWord(b);
}

/** Whether a domain is named for one of these organisations (qwest.net for "Qwest Communications"). */
function domainOfFamily(domain: string, names: ReadonlyArray<string | null>): boolean {
  const label = (getDomainWithoutSuffix(domain) ?? '').replace(/[^a-z0-9]/g, '');
  if (label.length < 3) return false;
  return names.some((name) => {
    if (name === null) return false;
    const joined = words(name).join('');
    const word = distinctiveWord(name);
    return joined.includes(label) || (word !== null && label.includes(word));
  });
}
