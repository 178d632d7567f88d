import type { CoreDeps, VerbArgs } from '../context.ts';
import { AppError, badRequest, sqlCall } from '../errors.ts';
import { forbiddenAddressClass, parseIp } from '../net/ip.ts';
import { levelOf, unidentified } from './consensus.ts';
import type { RecentResults } from './hot-cache.ts';
import type { LocalAnswer, LocalIpData } from './local-data.ts';
import type { ConsensusResult, EnrichmentProvider, IpProvider, ProviderAnswer, TrafficType } from './types.ts';

/** What the identification waterfall needs, assembled at the entry point. */
export interface IpDeps {
  /** The current local data (reloaded after imports and learned records). */
  data(): LocalIpData;
  countryOf(ip: string): string | null;
  providers: IpProvider[];
  providerTimeoutMs: number;
  /** Combines provider answers (consensus.ts). */
  decide(answers: ProviderAnswer[]): ConsensusResult;
  /** Calls the providers in parallel, each with its own timeout (providers/run.ts). */
  query(providers: IpProvider[], ip: string, opts: { timeoutMs: number }): Promise<{ answers: ProviderAnswer[]; failures: { provider: string; error: string }[] }>;
  enrichment: EnrichmentProvider | null;
  /** Writes a confirmed provider answer back as a local record and makes it visible. */
  learn(ip: string, company: { domain: string; company_name: string; confidence: number }): Promise<void>;
  /** Re-reads imported ranges and company records after an import. */
  reload?(): Promise<void>;
  /** This process's recent results (hot-cache.ts), in front of everything else. */
  recent?: RecentResults<CachedVerdict>;
  /** A cache shared by the replicas in front of Postgres (Redis); values are `HotEntry` JSON. */
  hotCache?: { get(key: string): Promise<string | null>; set(key: string, value: string, ttlSeconds: number): Promise<void> };
}

export type IpOperation = 'ip-to-company' | 'ip-to-best-fit';
export const COST: Record<IpOperation, number> = { 'ip-to-company': 5, 'ip-to-best-fit': 8 };
const CACHE_TTL_SECONDS = 7 * 24 * 3600;
const FREE_TYPES: ReadonlySet<TrafficType> = new Set(['vpn', 'hosting', 'isp']);

/** The internal verdict both endpoints are rendered from: the consensus fields plus the context. */
interface Verdict extends ConsensusResult {
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

/** What the shared hot cache holds: the result and when it stops being served (epoch ms). */
interface HotEntry {
  expires_at: number;
  result: Verdict;
}

function frozenHit(v: Verdict): CachedVerdict {
  Object.freeze(v.matches);
  if (v.decision_makers) Object.freeze(v.decision_makers);
  return Object.freeze({ ...v, cached: true as const });
}

/** Credits a lookup costs once its verdict is known. */
function costOf(operation: IpOperation, v: Verdict): number {
  if (FREE_TYPES.has(v.traffic_type)) return 0;
  if (operation === 'ip-to-company') return v.identified && v.traffic_type === 'business' ? COST[operation] : 0;
  return COST[operation];
}

async function balanceOf(ctx: CoreDeps, accountId: string): Promise<number> {
  const [a] = await ctx.db<{ credit_balance: number }>`select credit_balance from accounts where id = ${accountId}`;
  return a?.credit_balance ?? 0;
}

/**
 * The waterfall, in order: invalid → 400; private/reserved → unknown (free); the account's 7-day
 * cache (this process's recent results, then Redis, then Postgres) → the stored result (no charge);
 * local VPN/hosting/ISP/education/government → free answer; a local business record → answered; otherwise the paid providers in parallel and consensus
 * (402 before any provider call when the account cannot pay). A charge and the cache write are one
 * transaction; a confirmed provider answer is learned as a local record.
 */
export async function identifyIp({
  ctx,
  input,
}: VerbArgs<{ accountId: string; ip: string; operation: IpOperation; website?: string | undefined; description?: string | undefined }>): Promise<
  Verdict & { cached: boolean }
> {
  const ipDeps = ctx.ip;
  if (!ipDeps) throw new AppError(503, 'IP identification is not configured on this deployment');
  const text = input.ip.trim();
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const parsed = parseIp(bare);
  if (!parsed) throw badRequest(`${input.operation === 'ip-to-company' ? 'ip' : 'ip_address'} must be an IPv4 or IPv6 address`);
  const ip = parsed.version === 4 ? bare : bare.toLowerCase();

  const reserved = forbiddenAddressClass(parsed);
  if (reserved) {
    return {
      ip,
      ...unidentified(`This is a ${reserved} address, not one seen on the public internet.`),
      vpn_provider: null,
      country_code: '',
      cached: false,
    };
  }

  // v2: the shared cache holds `HotEntry` values (v1 held bare results, which a replica still on the
  // old code would misread during a rolling deploy).
  const cacheKey = `sl:ip:v2:${input.operation}:${input.accountId}:${ip}`;
  /** Keeps a stored result in this process until its expiry; the copy is what a hit returns. */
  const remember = (result: Verdict, expiresAt: number): CachedVerdict => {
    const hit = frozenHit(result);
    ipDeps.recent?.set(cacheKey, hit, expiresAt);
    return hit;
  };
  const recent = ipDeps.recent?.get(cacheKey);
  if (recent) return recent;
  const hot = await ipDeps.hotCache?.get(cacheKey).catch(() => null);
  const entry = hot ? hotEntry(hot) : null;
  if (entry && entry.expires_at > Date.now()) return remember(entry.result, entry.expires_at);
  // The remaining lifetime in the database's clock, turned into an expiry in ours: no clock skew.
  const [stored] = await ctx.db<{ result: string; ttl_ms: number }>`
    select result::text as result, (extract(epoch from (expires_at - now())) * 1000)::float8 as ttl_ms from ip_cache
    where account_id = ${input.accountId} and operation = ${input.operation} and ip = ${ip}::inet and expires_at > now()`;
  if (stored) return remember(JSON.parse(stored.result) as Verdict, Date.now() + stored.ttl_ms);

  const country = ipDeps.countryOf(ip) ?? '';
  const local = ipDeps.data().lookup(parsed);
  let verdict: Verdict;
  if (local.traffic_type !== null) {
    verdict = fromLocal(ip, country, local);
  } else {
    const potential = COST[input.operation];
    const balance = await balanceOf(ctx, input.accountId);
    if (balance < potential) {
      throw new AppError(402, `not enough credits: this lookup can cost ${potential}, the balance is ${balance}`, {
        credits_required: potential,
        credit_balance: balance,
      });
    }
    const { answers, failures } = await ipDeps.query(ipDeps.providers, ip, { timeoutMs: ipDeps.providerTimeoutMs });
    const decided = ipDeps.decide(answers);
    verdict = { ip, ...decided, vpn_provider: null, country_code: country };
    if (!answers.length) {
      verdict.reason = ipDeps.providers.length
        ? `${local.reason} No identification provider answered${failures.length ? ` (${failures.map((f) => f.provider).join(', ')} failed)` : ''}.`
        : `${local.reason} No identification provider is configured.`;
    }
    if (decided.traffic_type === 'vpn') verdict.vpn_provider = answers.find((a) => a.traffic_type === 'vpn')?.company_name ?? null;
    if (input.operation === 'ip-to-best-fit' && !verdict.identified && ipDeps.enrichment && !FREE_TYPES.has(verdict.traffic_type)) {
      const deeper = await ipDeps.enrichment
        .enrich({ ip, website: input.website, description: input.description }, AbortSignal.timeout(ipDeps.providerTimeoutMs))
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
  }

  const cost = costOf(input.operation, verdict);
  // The row as stored: a concurrent first lookup of the same IP may have stored its result first,
  // and that one stands until it expires (migration 0007), so the caches copy it, not ours.
  const [kept] = await sqlCall(
    () => ctx.db<{ result: string; ttl_ms: number }>`
      select result::text as result, ttl_ms from sl_charge_lookup(${input.accountId}, ${input.operation}, ${ip}::inet, ${cost},
                                          ${JSON.stringify(verdict)}::text::jsonb, ${`${CACHE_TTL_SECONDS} seconds`}::interval)`,
  );
  if (kept) {
    const result = JSON.parse(kept.result) as Verdict;
    const expiresAt = Date.now() + kept.ttl_ms;
    remember(result, expiresAt);
    const shared: HotEntry = { expires_at: expiresAt, result };
    await ipDeps.hotCache?.set(cacheKey, JSON.stringify(shared), Math.ceil(kept.ttl_ms / 1000)).catch(() => undefined);
  }
  return { ...verdict, cached: false };
}

/** A hot-cache value, or null for one this version cannot read (it is then looked up afresh). */
function hotEntry(text: string): HotEntry | null {
  try {
    const v = JSON.parse(text) as Partial<HotEntry> | null;
    return v && typeof v.expires_at === 'number' && v.result && typeof v.result === 'object' ? (v as HotEntry) : null;
  } catch {
    return null;
  }
}

/** Operator: add credits to an account (a `grant` transaction). */
export async function grantCredits({ ctx, input }: VerbArgs<{ accountId: string; credits: number }>) {
  const [row] = await sqlCall(() => ctx.db<{ balance: number }>`select sl_grant_credits(${input.accountId}::uuid, ${input.credits}) as balance`);
  return { account_id: input.accountId, credit_balance: row?.balance ?? 0 };
}
