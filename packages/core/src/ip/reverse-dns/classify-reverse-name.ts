import { parse } from 'tldts';
import type { ParsedIp } from '../../kernel/net/ip.ts';
import type { SourceAnswer, TrafficType } from '../types.ts';
import { type InstitutionSuffixes, type RdnsDomainList, type RdnsDomainType, SHIPPED_RDNS_DOMAINS } from './rdns-domains.ts';
import { recogniseDynamicName } from './recognise-dynamic-name.ts';

/** The source's name in answers, `matches` and weights. */
export const RDNS_SOURCE = 'rdns';

/**
 * The source's own weight for each kind of claim. A confirmed name under a company's domain is good
 * evidence of the company but not proof (a host's customer may name a rented server after itself):
 * `likely` alone, `confirmed` with a second source. A listed ISP or host domain is reviewed data
 * about who runs the network; dynamic naming on an unlisted domain is a pattern, weighed as such.
 */
export const RDNS_CONFIDENCE = {
  company: 0.6,
  listedNetwork: 0.8,
  dynamicNaming: 0.6,
  institution: 0.6,
} as const;

const TRAFFIC_OF: Record<RdnsDomainType, TrafficType> = { isp: 'isp', mobile: 'isp', hosting: 'hosting', cdn: 'hosting' };
const WHOSE: Record<RdnsDomainType, string> = {
  isp: "an ISP's",
  mobile: "a mobile carrier's",
  hosting: "a hosting provider's",
  cdn: "a CDN's",
};

/**
 * What a forward-confirmed PTR name says about its address, in this order:
 * 1. its registrable domain (public-suffix aware: `gw1.acme.co.uk` → acme.co.uk) is on the reviewed
 *    list of ISP, mobile, hosting and CDN domains → that traffic type, no company;
 * 2. its public suffix is an education or government one (`edu`, `ac.uk`, `gov`, `gouv.fr`) → that
 *    traffic type, the institution's domain, no company;
 * 3. it is an ISP's or a host's generated naming (the address in the name, `dyn`, `dsl`, ...) →
 *    `isp`, no company, whatever the domain;
 * 4. otherwise the domain is a company's: `business`, its domain, no company name (a domain is not
 *    a name, and guessing one from it is not done).
 * Null when the name has no registrable domain (an IP literal, a bare public suffix).
 *
 * `name` is a normalised, confirmed PTR name (confirmReverseName); `address` the address it
 * confirmed for.
 */
export function classifyReverseName(name: string, address: ParsedIp, list: RdnsDomainList = SHIPPED_RDNS_DOMAINS): SourceAnswer | null {
  const parsed = parse(name);
  const registrable = parsed.domain;
  const suffix = parsed.publicSuffix;
  if (parsed.isIp || !registrable || !suffix) return null;
  const confirmed = `PTR ${name} confirmed`;

  const listed = listedEntry(name, registrable, list);
  if (listed) {
    return answer(
      TRAFFIC_OF[listed.entry.type],
      null,
      RDNS_CONFIDENCE.listedNetwork,
      `${confirmed}: ${listed.domain} is ${WHOSE[listed.entry.type]} naming`,
    );
  }

  const institution = institutionOf(suffix, list);
  if (institution) {
    const what = institution === 'education' ? 'an education' : 'a government';
    return answer(institution, registrable, RDNS_CONFIDENCE.institution, `${confirmed}: ${suffix} is ${what} suffix`);
  }

  const dynamic = recogniseDynamicName(name, address, registrable);
  if (dynamic) return answer('isp', null, RDNS_CONFIDENCE.dynamicNaming, `${confirmed}: an ISP's generated naming (${dynamic})`);

  return answer('business', registrable, RDNS_CONFIDENCE.company, confirmed);
}

/** The list entry of the name's registrable domain, or of a longer suffix of the name if one is listed. */
/** The reviewed list's class of a carrier's or host's registrable domain (`verizon.net` → isp), or null when unlisted. */
export function listedDomainTraffic(domain: string, list: RdnsDomainList = SHIPPED_RDNS_DOMAINS): TrafficType | null {
  const entry = list.domains.get(domain.toLowerCase());
  return entry ? TRAFFIC_OF[entry.type] : null;
}

function listedEntry(name: string, registrable: string, list: RdnsDomainList) {
  let candidate = name;
  while (candidate.length >= registrable.length) {
    const entry = list.domains.get(candidate);
    if (entry) return { domain: candidate, entry };
    const dot = candidate.indexOf('.');
    if (dot < 0) break;
    candidate = candidate.slice(dot + 1);
  }
  return null;
}

function institutionOf(suffix: string, list: RdnsDomainList): TrafficType | null {
  const dot = suffix.indexOf('.');
  const matches = (s: InstitutionSuffixes) => (dot < 0 ? s.whole.has(suffix) : s.firstLabel.has(suffix.slice(0, dot)));
  if (matches(list.education)) return 'education';
  if (matches(list.government)) return 'government';
  return null;
}

function answer(traffic_type: TrafficType, domain: string | null, confidence: number, reason: string): SourceAnswer {
  return { provider: RDNS_SOURCE, traffic_type, domain, company_name: null, confidence, reason, country_code: null };
}
