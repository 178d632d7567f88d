import { z } from '@hono/zod-openapi';

/**
 * The vocabulary of the identification waterfall, shared by the local databases, the paid
 * providers, consensus and the endpoints.
 */
export const TrafficType = z.enum(['business', 'isp', 'hosting', 'vpn', 'education', 'government', 'unknown']);
export type TrafficType = z.infer<typeof TrafficType>;
export const ConfidenceLevel = z.enum(['confirmed', 'likely', 'unconfirmed']);
export type ConfidenceLevel = z.infer<typeof ConfidenceLevel>;

/** One paid provider's answer for one IP, normalised. */
export interface ProviderAnswer {
  provider: string;
  /** Registrable company domain, lower case, no scheme/www (normalised by the adapter). */
  domain: string | null;
  company_name: string | null;
  /** The provider's own view of the traffic, when it gives one. */
  traffic_type: TrafficType | null;
  /** The provider's own confidence in [0, 1], when it gives one. */
  confidence: number | null;
  country_code: string | null;
}

/**
 * One free source's vote (network ownership, forward-confirmed reverse DNS, RDAP, the operator's
 * own databases): the provider answer's shape, so consensus weighs it beside the paid providers,
 * plus the clause the answer's `reason` quotes for it ("PTR gw1.acme.com confirmed").
 */
export interface SourceAnswer extends ProviderAnswer {
  reason: string;
}

/** A paid identification provider behind a small interface; tried in parallel with a timeout. */
export interface IpProvider {
  readonly name: string;
  /** Resolves null when the provider has no answer for this IP; rejects on failure. */
  lookup(ip: string, signal: AbortSignal): Promise<ProviderAnswer | null>;
}

export interface Match {
  domain: string;
  confidence: number;
}

export interface ConsensusResult {
  identified: boolean;
  domain: string | null;
  company_name: string | null;
  confidence: number;
  confidence_level: ConfidenceLevel;
  traffic_type: TrafficType;
  reason: string;
  /** Candidates ranked by confidence, best first. */
  matches: Match[];
}

/** Deeper enrichment for ip-to-best-fit: individuals and decision makers behind a company/IP. */
export interface EnrichmentPerson {
  name: string;
  title: string | null;
  linkedin_url: string | null;
}

export interface EnrichmentAnswer {
  provider: string;
  domain: string | null;
  company_name: string | null;
  confidence: number | null;
  people: EnrichmentPerson[];
}

export interface EnrichmentProvider {
  readonly name: string;
  enrich(
    input: { ip: string; website?: string | undefined; description?: string | undefined },
    signal: AbortSignal,
  ): Promise<EnrichmentAnswer | null>;
}

/** A named person behind an address (identification_type `individual`); made for US visitors only. */
export interface PersonMatch {
  provider: string;
  linkedin_url: string;
  name: string;
  title: string | null;
  company: string | null;
}

/** Matches the visitor at an identified company's address to a person, or answers null. */
export interface PersonMatcher {
  readonly name: string;
  matchPerson(input: { ip: string; domain: string }, signal: AbortSignal): Promise<PersonMatch | null>;
}

/**
 * Whose 7-day cache a lookup reads and fills: an account's results for one operation (`tracker`:
 * the visitor identifications of the account's trackers, paid in IDs rather than credits).
 */
export type IpOperation = CreditOperation | 'tracker';
/** The lookups paid in credits. */
export type CreditOperation = 'ip-to-company' | 'ip-to-best-fit';
/** VPN, hosting and ISP answers are never charged, and never sent to deeper enrichment. */
export const FREE_TYPES: ReadonlySet<TrafficType> = new Set(['vpn', 'hosting', 'isp']);

/** The internal verdict both endpoints and the tracker are rendered from: the consensus fields plus the context. */
export interface Verdict extends ConsensusResult {
  ip: string;
  vpn_provider: string | null;
  country_code: string;
  decision_makers?: EnrichmentPerson[];
}
