import type { VerbArgs } from '../kernel/context.ts';
import { AppError } from '../kernel/errors.ts';
import { forbiddenAddressClass, parseIp } from '../kernel/net/ip.ts';
import { levelOf, unidentified } from './consensus.ts';
import type { LocalAnswer, LocalIpData } from './local-data.ts';
import type { RecentResults } from './recent-results.ts';
import { readStoredResult, type StoredResult } from './stored-results.ts';
import type { ConsensusResult, EnrichmentProvider, IpProvider, PersonMatcher, ProviderAnswer, TrafficType } from './types.ts';

/** What the identification waterfall needs, assembled at the entry point. */
export interface IpDeps {
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
  /** This process's recent results (recent-results.ts), in front of everything else. */
  recentResults?: RecentResults<CachedVerdict>;
  /** Results shared by the replicas in front of Postgres (Redis); values are `SharedEntry` JSON. */
  sharedResults?: { get(key: string): Promise<string | null>; set(key: string, value: string, ttlSeconds: number): Promise<void> };
}

/**
 * Whose 7-day cache a lookup reads and fills: an account's results for one operation (`tracker`:
 * the visitor identifications of the account's trackers, paid in IDs rather than credits).
 */
export type IpOperation = CreditOperation | 'tracker';
/** The lookups paid in credits. */
export type CreditOperation = 'ip-to-company' | 'ip-to-best-fit';
/** Spec: ip-to-company costs 5 credits per business match; ip-to-best-fit 8 per lookup. */
export const COST: Record<CreditOperation, number> = { 'ip-to-company': 5, 'ip-to-best-fit': 8 };
/** VPN, hosting and ISP answers are never charged. */
export const FREE_TYPES: ReadonlySet<TrafficType> = new Set(['vpn', 'hosting', 'isp']);

/** The internal verdict both endpoints are rendered from: the consensus fields plus the context. */
export interface Verdict extends ConsensusResult {
  ip: string;
  vpn_provider: string | null;
  country_code: string;
  decision_makers?: { name: string; title: string | null; linkedin_url: string | null }[];
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

/** A result as a cache serves it: shared by every request for its key, so frozen. */
export type CachedVerdict = Readonly<Verdict & { cached: true }>;

/** What the shared results hold: the result and when it stops being served (epoch ms). */
export interface SharedEntry {
  expires_at: number;
  result: Verdict;
}

export function frozenHit(v: Verdict): CachedVerdict {
  Object.freeze(v.matches);
  if (v.decision_makers) Object.freeze(v.decision_makers);
  return Object.freeze({ ...v, cached: true as const });
}

/**
 * What a lookup settles on, before anyone pays: a stored result (`cache`, already paid for), an
 * address no lookup is made for (`reserved`: nothing to pay or store), or a fresh verdict from the
 * local data or the providers (`lookup`: the caller pays for it and stores it).
 */
export type Resolution =
  | { source: 'cache'; verdict: CachedVerdict }
  | { source: 'reserved'; verdict: Verdict }
  | { source: 'lookup'; verdict: Verdict };

export interface ResolveIpInput {
  /** A valid IPv4 or IPv6 address (the route's schema checked it). */
  ip: string;
  accountId: string;
  operation: IpOperation;
  /**
   * Called once, only when the answer needs the paid providers, before any is called: it throws
   * (402) when the caller cannot pay for what the lookup may cost.
   */
  beforePaidLookup(): Promise<void>;
  /**
   * The account's stored result for the address, when the caller has read it already (the tracker
   * worker reads a whole claim's in one statement); null when none is stored. Left out, it is read here.
   */
  stored?: StoredResult | null;
  /** Context for ip-to-best-fit's deeper enrichment of an unresolved IP. */
  enrich?: { website?: string | undefined; description?: string | undefined } | undefined;
}

/** The caches' key of a lookup: per operation and account, as results are stored. */
export function lookupCacheKey(operation: IpOperation, accountId: string, ip: string): string {
  // v2: the shared cache holds `SharedEntry` values (v1 held bare results, which a replica still on the
  // old code would misread during a rolling deploy).
  return `sl:ip:v2:${operation}:${accountId}:${ip}`;
}

/** Keeps a stored result in this process until its expiry; the copy is what a hit returns. */
export function rememberResult(ipDeps: IpDeps, key: string, result: Verdict, expiresAt: number): CachedVerdict {
  const hit = frozenHit(result);
  ipDeps.recentResults?.set(key, hit, expiresAt);
  return hit;
}

/**
 * Resolves an address, spending no money: private/reserved → unknown; the account's 7-day cache
 * (this process's recent results, then Redis, then Postgres) → the stored result; local
 * VPN/hosting/ISP/education/government → a free answer; a local business record → answered;
 * otherwise, after `beforePaidLookup` agreed, the paid providers in parallel and consensus, then for
 * ip-to-best-fit deeper enrichment of what is still unresolved. A confirmed provider answer is
 * learned as a local record. Paying, and storing the result, is the caller's next step
 * (chargeLookupCredits, or the ID ledger for tracker identifications).
 */
export async function resolveIp({ ctx, input }: VerbArgs<ResolveIpInput>): Promise<Resolution> {
  // A server still loading its local data answers this lookup once the data is in.
  const ipDeps = ctx.ip ?? (await ctx.ipLoading);
  if (!ipDeps) throw new AppError('ip_data_unavailable', 'IP identification is not configured on this deployment, or its local data did not load');
  const parsed = parseIp(input.ip);
  if (!parsed) throw new Error(`resolveIp was given ${JSON.stringify(input.ip)}, which the route should have refused`);
  const ip = input.ip;

  const reserved = forbiddenAddressClass(parsed);
  if (reserved) {
    const verdict = {
      ip,
      ...unidentified(`This is a ${reserved} address, not one seen on the public internet.`),
      vpn_provider: null,
      country_code: '',
    };
    return { source: 'reserved', verdict };
  }

  const cacheKey = lookupCacheKey(input.operation, input.accountId, ip);
  const recent = ipDeps.recentResults?.get(cacheKey);
  if (recent) return { source: 'cache', verdict: recent };
  const shared = await ipDeps.sharedResults?.get(cacheKey).catch(() => null);
  const entry = shared ? sharedEntry(shared) : null;
  if (entry && entry.expires_at > Date.now()) return { source: 'cache', verdict: rememberResult(ipDeps, cacheKey, entry.result, entry.expires_at) };
  const stored = input.stored !== undefined ? input.stored : await readStoredResult(ctx, input.accountId, input.operation, ip);
  if (stored) return { source: 'cache', verdict: rememberResult(ipDeps, cacheKey, stored.result, Date.now() + stored.ttlMs) };

  // One call for the local answer and the country (an IPv4 address is one table search).
  const local = ipDeps.data().facts(ip, ipDeps.countryOf);
  if (!local) throw new Error(`resolveIp could not look up ${JSON.stringify(ip)}, which parsed`);
  const country = local.country_code ?? '';
  if (local.traffic_type !== null) return { source: 'lookup', verdict: fromLocal(ip, country, local) };

  await input.beforePaidLookup();
  const { answers, failures } = await ipDeps.query(ipDeps.providers, ip, { timeoutMs: ipDeps.providerTimeoutMs });
  const decided = ipDeps.decide(answers);
  let verdict: Verdict = { ip, ...decided, vpn_provider: null, country_code: country };
  if (!answers.length) {
    verdict.reason = ipDeps.providers.length
      ? `${local.reason} No identification provider answered${failures.length ? ` (${failures.map((f) => f.provider).join(', ')} failed)` : ''}.`
      : `${local.reason} No identification provider is configured.`;
  }
  if (decided.traffic_type === 'vpn') verdict.vpn_provider = answers.find((a) => a.traffic_type === 'vpn')?.company_name ?? null;
  if (input.enrich && !verdict.identified && ipDeps.enrichment && !FREE_TYPES.has(verdict.traffic_type)) {
    const deeper = await ipDeps.enrichment
      .enrich({ ip, website: input.enrich.website, description: input.enrich.description }, AbortSignal.timeout(ipDeps.providerTimeoutMs))
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
  return { source: 'lookup', verdict };
}

/** A shared-results value, or null for one this version cannot read (it is then looked up afresh). */
function sharedEntry(text: string): SharedEntry | null {
  try {
    const v = JSON.parse(text) as Partial<SharedEntry> | null;
    return v && typeof v.expires_at === 'number' && v.result && typeof v.result === 'object' ? (v as SharedEntry) : null;
  } catch {
    return null;
  }
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
