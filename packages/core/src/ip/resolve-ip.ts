import { levelOf, unidentified } from './consensus.ts';
import type { LocalAnswer, LocalFacts, LocalIpData } from './local-data.ts';
import type { OperatorDatabaseLookup, OperatorDatabaseOptions } from './operator-databases/index.ts';
import type { OwnershipSource } from './ownership/index.ts';
import type { RdapSource } from './rdap/index.ts';
import type { CachedVerdict, ResultTiers } from './result-cache.ts';
import type { ReverseDnsSource } from './reverse-dns/index.ts';
import {
  type ConsensusResult,
  type EnrichmentProvider,
  FREE_TYPES,
  type IpProvider,
  type PersonMatcher,
  type ProviderAnswer,
  type SourceAnswer,
  type Verdict,
} from './types.ts';

/**
 * What the identification waterfall needs, assembled at the entry point, with the result cache's
 * upper tiers (result-cache.ts: this process's recent results, Redis when configured).
 */
export interface IpDeps extends ResultTiers {
  /** The current local data (reloaded after imports and learned records). */
  data(): LocalIpData;
  /** The country database's answer; `data().facts` asks it only where its own table does not answer (IPv6). */
  countryOf(ip: string): string | null;
  providers: IpProvider[];
  providerTimeoutMs: number;
  /** Combines provider answers (consensus.ts). */
  decide(answers: ProviderAnswer[]): ConsensusResult;
  /** Calls the providers in parallel, each with its own timeout (providers/run.ts). */
  query(
    providers: IpProvider[],
    ip: string,
    opts: { timeoutMs: number },
  ): Promise<{ answers: ProviderAnswer[]; failures: { provider: string; error: string }[] }>;
  enrichment: EnrichmentProvider | null;
  /** Names the person behind a US visitor's identified company address (tracker identifications). */
  personMatch?: PersonMatcher | null;
  /** Writes a confirmed provider answer back as a local record and makes it visible. */
  learn(ip: string, company: { domain: string; company_name: string; confidence: number }): Promise<void>;
  /** Re-reads imported ranges and company records after an import. */
  reload?(): Promise<void>;
  /** The free sources consulted before any paid provider; absent (a hand-built waterfall), none. */
  free?: FreeSources;
}

/**
 * The free identification tier beside the local data: each source is one more voter with its own
 * confidence (consensus.ts counts agreement by origin), and each may be turned off (null).
 */
export interface FreeSources {
  /** Who owns the routing network, when that is a company (ip/ownership). */
  ownership: OwnershipSource | null;
  /** The operator's own MaxMind / IPinfo files (`IP_DATABASES`). */
  databases: { lookUp(ip: string, classifiers?: Pick<OperatorDatabaseOptions, 'ownerTraffic'>): OperatorDatabaseLookup } | null;
  /** Forward-confirmed reverse DNS (`RDNS`, `DNS_SERVERS`). */
  reverseDns: ReverseDnsSource | null;
  /** The registries' record of the address's block (`RDAP`, `RDAP_BASE_URL`). */
  rdap: RdapSource | null;
  /** Ask the paid providers even when the free sources confirmed a company (`PAID_LOOKUPS=always`). */
  paidAfterConfirmed: boolean;
}

/**
 * How a lookup settled: a stored result (`cache`, already paid for), an address no lookup is made
 * for (`reserved`: nothing to pay or store), or a fresh verdict from the local data or the providers
 * (`lookup`: the caller pays for it and stores it).
 */
export type Resolution =
  | { source: 'cache'; verdict: CachedVerdict }
  | { source: 'reserved'; verdict: Verdict }
  | { source: 'lookup'; verdict: Verdict };

/**
 * What the free steps leave when the paid providers may tell more: the local answer (with the
 * country) and the free sources' votes, which consensus weighs again beside the providers'.
 */
export interface PaidLookupNeeded {
  source: 'providers';
  local: LocalFacts;
  free: SourceAnswer[];
}

function fromLocal(ip: string, country: string, local: LocalAnswer): Verdict {
  const c = local.company;
  return {
    ip,
    identified: Boolean(c),
    domain: c?.domain ?? null,
    company_name: c?.company_name ?? null,
    confidence: c ? c.confidence : local.traffic_type === 'business' ? 0.5 : 0.9,
    confidence_level: c ? levelOf(c.confidence) : 'confirmed',
    traffic_type: local.traffic_type ?? 'unknown',
    reason: local.reason,
    matches: c ? [{ domain: c.domain, confidence: c.confidence }] : [],
    vpn_provider: local.vpn_provider,
    country_code: country,
  };
}

/**
 * The answer for a private or reserved address (`addressClass`, from forbiddenAddressClass): no
 * lookup is made for it, so nothing is paid or stored. Callers check the class before any cache,
 * so such an address never costs a read.
 */
export function reservedVerdict(ip: string, addressClass: string): Verdict {
  return fromConsensus(ip, '', unidentified(`This is a ${addressClass} address, not one seen on the public internet.`));
}

/** Local classes the free sources do not question: a VPN or hosting range stays one whatever its PTR says. */
const SETTLED_LOCALLY: ReadonlySet<string> = new Set(['vpn', 'hosting', 'education', 'government']);

/**
 * The free steps of resolving a public address that no cache holds, spending no money. The local
 * data settles a VPN, hosting, education or government network and a known company record at once.
 * Otherwise the free sources vote (the owner of the network, the operator's databases, reverse DNS,
 * RDAP; consensus.ts weighs them): inside an ISP's network they may find a company's own block, and
 * the ISP's answer stands when they do not; elsewhere, their verdict stands unless paid providers
 * (or, for ip-to-best-fit, `enrich`ment) are configured and the free sources did not confirm a
 * company. Whether they may be asked is the caller's decision (who pays, and with what) before
 * `resolveWithProviders`.
 */
export async function resolveFree(
  ipDeps: IpDeps,
  ip: string,
  opts: { enrich?: boolean } = {},
): Promise<{ source: 'lookup'; verdict: Verdict } | PaidLookupNeeded> {
  // One call for the local answer and the country (an IPv4 address is one table search).
  const local = ipDeps.data().facts(ip, ipDeps.countryOf);
  if (!local) throw new Error(`resolveFree could not look up ${JSON.stringify(ip)}, which parsed`);
  const country = local.country_code ?? '';
  if (local.company || (local.traffic_type !== null && SETTLED_LOCALLY.has(local.traffic_type))) {
    return { source: 'lookup', verdict: fromLocal(ip, country, local) };
  }
  if (local.traffic_type === 'isp') {
    // An ISP's network: only what names this address's own block or line (RDAP's registration, a
    // confirmed PTR, the operator's databases) can find a company in it, so the network's owner does
    // not vote again; when they name none, the ISP's answer stands.
    const votes = await freeVotes(ipDeps.free, ip, local, { owner: false });
    const decided = votes.length ? ipDeps.decide(votes) : null;
    const verdict = decided?.identified ? fromConsensus(ip, country, decided) : fromLocal(ip, country, local);
    return { source: 'lookup', verdict };
  }
  const free = await freeVotes(ipDeps.free, ip, local, { owner: true });
  const decided = free.length ? ipDeps.decide(free) : null;
  const confirmed = decided?.identified === true && decided.confidence_level === 'confirmed';
  const paidSteps = ipDeps.providers.length > 0 || (opts.enrich === true && ipDeps.enrichment !== null);
  if (paidSteps && (!confirmed || ipDeps.free?.paidAfterConfirmed)) return { source: 'providers', local, free };
  if (!decided) {
    return { source: 'lookup', verdict: { ...fromLocal(ip, country, local), reason: `${local.reason} No identification provider is configured.` } };
  }
  return { source: 'lookup', verdict: { ...fromConsensus(ip, country, decided), reason: withLocalReason(local, decided) } };
}

/** A verdict from consensus: it names no VPN provider; the country is the local data's. */
function fromConsensus(ip: string, country: string, decided: ConsensusResult): Verdict {
  return { ip, ...decided, vpn_provider: null, country_code: country };
}

/** The network's owner leads the reason when the sources named nobody ("belongs to … (AS…)"). */
function withLocalReason(local: LocalFacts, decided: ConsensusResult): string {
  return decided.identified ? decided.reason : `${local.reason} ${decided.reason}`;
}

/** The free sources' votes on `ip`: the local ones at once, reverse DNS and RDAP together, each within its own timeout. */
async function freeVotes(free: FreeSources | undefined, ip: string, local: LocalFacts, ask: { owner: boolean }): Promise<SourceAnswer[]> {
  if (!free) return [];
  const votes: SourceAnswer[] = [];
  // The data made the owner's vote with the facts when it was loaded with this source as its judge.
  const owned = ask.owner && free.ownership ? (local.owner_vote === undefined ? free.ownership.answer(local) : local.owner_vote) : null;
  if (owned) votes.push(owned);
  if (free.databases) votes.push(...free.databases.lookUp(ip, { ownerTraffic: ownerTrafficOf(local) }).answers);
  const [named, registered] = await Promise.all([
    free.reverseDns ? free.reverseDns.lookup(ip) : null,
    free.rdap ? free.rdap.lookup(ip, { name: local.org, trafficType: local.traffic_type }) : null,
  ]);
  if (named) votes.push(named);
  if (registered) votes.push(registered);
  return votes;
}

/**
 * The verdict on the address's network owner for the operator's databases (so a GeoIP2 record that
 * writes a company as its own ISP names it): ownership's vote when it voted, else the local class,
 * and only for the AS the local data knows; a database's other AS gets no view.
 */
function ownerTrafficOf(local: LocalFacts): NonNullable<OperatorDatabaseOptions['ownerTraffic']> {
  const traffic = local.owner_vote ? local.owner_vote.traffic_type : local.traffic_type;
  return (owner) => (owner.asn !== null && owner.asn === local.asn ? traffic : null);
}

/**
 * The paid step, once the caller has decided the lookup may be paid for: the paid providers in
 * parallel and consensus, then for ip-to-best-fit (`enrich`) deeper enrichment of what is still
 * unresolved. A confirmed answer is learned as a local record. Paying for the verdict, and storing
 * it, is the caller's next step (result-cache.ts's storeResult, or the ID ledger for tracker
 * identifications).
 */
export async function resolveWithProviders(
  ipDeps: IpDeps,
  ip: string,
  local: LocalFacts,
  enrich?: { website?: string | undefined; description?: string | undefined },
  free: readonly SourceAnswer[] = [],
): Promise<Verdict> {
  const country = local.country_code ?? '';
  const { answers, failures } = await ipDeps.query(ipDeps.providers, ip, { timeoutMs: ipDeps.providerTimeoutMs });
  const votes: ProviderAnswer[] = [...free, ...answers];
  const decided = ipDeps.decide(votes);
  let verdict = fromConsensus(ip, country, decided);
  if (!answers.length) {
    const before = free.length ? withLocalReason(local, decided) : local.reason;
    verdict.reason = ipDeps.providers.length
      ? `${before} No identification provider answered${failures.length ? ` (${failures.map((f) => f.provider).join(', ')} failed)` : ''}.`
      : `${before} No identification provider is configured.`;
  }
  if (decided.traffic_type === 'vpn') verdict.vpn_provider = votes.find((a) => a.traffic_type === 'vpn' && a.company_name)?.company_name ?? null;
  if (enrich && !verdict.identified && ipDeps.enrichment && !FREE_TYPES.has(verdict.traffic_type)) {
    const deeper = await ipDeps.enrichment
      .enrich({ ip, website: enrich.website, description: enrich.description }, AbortSignal.timeout(ipDeps.providerTimeoutMs))
      .catch(() => null);
    if (deeper?.domain) {
      const confidence = deeper.confidence ?? 0.6;
      verdict = {
        ...verdict,
        identified: confidence >= 0.5,
        domain: deeper.domain,
        company_name: deeper.company_name,
        confidence,
        confidence_level: levelOf(confidence),
        traffic_type: 'business',
        reason: `Deeper enrichment (${deeper.provider}) matched ${deeper.company_name ?? deeper.domain}.`,
        matches: [{ domain: deeper.domain, confidence }, ...verdict.matches.filter((m) => m.domain !== deeper.domain)],
        decision_makers: deeper.people,
      };
    }
  }
  if (verdict.identified && verdict.confidence_level === 'confirmed' && verdict.domain && verdict.company_name) {
    await ipDeps.learn(ip, { domain: verdict.domain, company_name: verdict.company_name, confidence: verdict.confidence });
  }
  return verdict;
}

declare module '../kernel/context.ts' {
  interface CoreDeps {
    /** The identification waterfall's data and providers; absent where IP endpoints are not served. */
    ip?: IpDeps;
    /**
     * Where the host loads the IP data after it starts answering (a long-lived server: a cold start
     * is not held up by it): settles with the waterfall once loaded (`ip` is set then), or undefined
     * if loading failed. Lookups that find no `ip` wait on this; nothing else does.
     */
    ipLoading?: Promise<IpDeps | undefined>;
  }
}
