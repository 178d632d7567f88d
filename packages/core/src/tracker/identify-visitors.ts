import { type IpDeps, type Resolution, reservedVerdict, resolveFree, resolveWithProviders } from '../ip/resolve-ip.ts';
import { readCachedResult, readStoredResults, type StoredResult } from '../ip/result-cache.ts';
import type { PersonMatch, Verdict } from '../ip/types.ts';
import { startAfterWork } from '../kernel/after-work.ts';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { forbiddenAddressClass, parseIp } from '../kernel/net/ip.ts';
import { createIdentificationSettler, type Settled, type SettleItem } from './settle-identifications.ts';

/**
 * Identifications one claim takes. Its settles share one statement (up to settle-identifications.ts'
 * batch), so a larger claim costs Postgres less per identification (64 → 128: 523 → 480 µs of
 * Postgres CPU each on local-data hits); its lookups run CONCURRENCY at a time, so keep it well
 * inside the lease when providers answer slowly.
 */
const IDENTIFICATIONS_PER_CLAIM = 128;
/** Lookups in flight at once per worker: the local data answers at once, the providers do not. */
const CONCURRENCY = 8;
/** Far longer than a claim's lookups take (each provider call is bounded by its own timeout). */
const LEASE_MS = 60_000;
/** A lookup that threw this many times is settled as failed instead of being tried forever. */
const MAX_ATTEMPTS = 5;

export interface IdentificationReport {
  identified: number;
  /** Resolved to no business (vpn, hosting, isp, education, government, unknown): no ID used. */
  failed: number;
  /** A traffic rule of the website excluded the verdict's country or company (traffic-rules.ts): no ID used. */
  excluded: number;
  /** Not identified: the key is suspended or revoked, or out of IDs (nothing used). */
  dropped: number;
  /** Given back after a lookup error, claimable again a minute per attempt later. */
  retried: number;
  claims: number;
}

/** The key cannot use an ID now: the identification is dropped before any provider is paid. */
class CannotPay extends Error {}

interface Claimed {
  id: string;
  ip: string;
  api_key_id: string;
  account_id: string;
  key_status: 'active' | 'suspended' | 'revoked';
  attempts: number;
}

/** The identification's columns for a verdict (sl_settle_identification reads them by name). */
function resultOf(v: Verdict, person: PersonMatch | null) {
  const base = {
    traffic_type: v.traffic_type,
    reason: v.reason.slice(0, 1000),
    confidence: v.confidence,
    country: /^[A-Z]{2}$/.test(v.country_code) ? v.country_code : '',
  };
  if (!isBusiness(v)) return { status: 'failed', ...base };
  return {
    status: 'identified',
    ...base,
    identification_type: person ? 'individual' : 'company',
    domain: v.domain,
    company_name: v.company_name,
    ...(person
      ? {
          person_linkedin_url: person.linkedin_url,
          person_linkedin_name: person.name,
          person_linkedin_title: person.title,
          person_linkedin_company: person.company ?? v.company_name,
        }
      : {}),
  };
}

const isBusiness = (v: Verdict): boolean => v.identified && v.traffic_type === 'business' && Boolean(v.domain && v.company_name);

/**
 * The person behind a US visitor's company address, when the deployment has a person matcher and
 * it finds one. Nobody else is ever matched: an EU (or any non-US) visitor is identified as a
 * company, and the matcher is not even asked; nor is it for a company or country a traffic rule of
 * the website excludes (the settle stores that one as excluded). A matcher that fails leaves a
 * company identification.
 */
async function personFor(ctx: CoreDeps, v: Verdict, excluded: () => Promise<boolean>): Promise<PersonMatch | null> {
  const matcher = ctx.ip?.personMatch;
  if (!matcher || v.country_code !== 'US' || !v.domain) return null;
  // A company the website excludes is never identified: nobody is looked up behind it.
  if (await excluded()) return null;
  try {
    return await matcher.matchPerson({ ip: v.ip, domain: v.domain }, AbortSignal.timeout(ctx.ip?.providerTimeoutMs ?? 3000));
  } catch (err) {
    ctx.log.warn('person match failed; identified as a company', { provider: matcher.name, error: err instanceof Error ? err.message : String(err) });
    return null;
  }
}

/** What the identifications of one claim share. */
interface Claim {
  /** The waterfall the claim's addresses are resolved with. */
  ipDeps: IpDeps;
  settle: (item: SettleItem) => Promise<Settled>;
  /** The account's stored results for the claim's addresses, by identification id (one statement for the claim). */
  stored: Map<string, StoredResult>;
  /** Whether a key can use an ID, asked once per claim and key (sl_can_identify). */
  canPay: (apiKeyId: string) => Promise<boolean>;
  report: IdentificationReport;
  /** Partners whose new events the claim's end dispatches. */
  partners: Set<string>;
  /** Whether a country or domain rule of the identification's website excludes the verdict (read once per claim). */
  excludes: (identificationId: string, v: Verdict) => Promise<boolean>;
}

/**
 * The country and domain rules that apply to each claimed identification's website, read in one
 * statement for the claim when first asked (only the person match asks: the settle applies the rules
 * itself, in sl_settle_locked_identification). Matched as sl_traffic_exclusion matches them.
 */
function claimExclusions(ctx: CoreDeps, ids: string[]): Claim['excludes'] {
  let rules: Promise<Map<string, { kind: string; value: string }[]>> | undefined;
  return async (id, v) => {
    rules ??= ctx.db<{ id: string; kind: string; value: string }>`
      select i.id::text as id, r.kind, r.value
      from identifications i
      join websites w on w.id = i.website_id
      join api_keys k on k.id = w.api_key_id
      join traffic_rules r on r.website_id = w.id or (r.website_id is null and r.account_id = k.account_id)
      where i.id = any(string_to_array(${ids.join(',')}, ',')::uuid[]) and r.kind in ('country', 'domain')`.then((rows) => {
      const byId = new Map<string, { kind: string; value: string }[]>();
      for (const r of rows) byId.set(r.id, [...(byId.get(r.id) ?? []), r]);
      return byId;
    });
    const domain = v.domain?.toLowerCase() ?? '';
    return ((await rules).get(id) ?? []).some(
      (r) => (r.kind === 'country' && r.value === v.country_code) || (r.kind === 'domain' && (domain === r.value || domain.endsWith(`.${r.value}`))),
    );
  };
}

/**
 * The visitor's address resolved as ip-to-company resolves one, under the account's `tracker`
 * results: reserved, then the result cache (the claim's stored rows read already), then the local
 * data, then, when the key can still use an ID (paid in IDs: a key that could not when its claim was
 * worked costs no provider calls), the providers.
 */
async function resolveVisitor(ctx: CoreDeps, claim: Claim, row: Claimed): Promise<Resolution> {
  const { ipDeps } = claim;
  const parsed = parseIp(row.ip);
  if (!parsed) throw new Error(`${JSON.stringify(row.ip)} is not an address, which should have been refused before`);
  const reserved = forbiddenAddressClass(parsed);
  if (reserved) return { source: 'reserved', verdict: reservedVerdict(row.ip, reserved) };
  const scope = { accountId: row.account_id, operation: 'tracker' as const, ip: row.ip };
  const cached = await readCachedResult(ctx, ipDeps, scope, claim.stored.get(row.id) ?? null);
  if (cached) return { source: 'cache', verdict: cached };
  const free = await resolveFree(ipDeps, row.ip);
  if (free.source === 'lookup') return free;
  if (!(await claim.canPay(row.api_key_id))) throw new CannotPay();
  return { source: 'lookup', verdict: await resolveWithProviders(ipDeps, row.ip, free.local, undefined, free.free) };
}

/**
 * Keeps a settle for the claim to await. Marked handled at once: it may fail while the lanes are
 * still resolving, before the claim awaits it (which still sees the failure).
 */
function handOver(settling: Promise<void>[], settled: Promise<void>): void {
  settled.catch(() => undefined);
  settling.push(settled);
}

/**
 * Resolves one claimed identification and hands it to the settler. Returns once it is handed over,
 * with the settle's own bookkeeping pushed to `settling`: a lane takes its next visitor without
 * waiting for the commit, so the claim's settles reach the settler together and share one statement
 * (waiting, eight lanes made eight statements of eight settles for a claim of 64).
 */
async function identifyOne(ctx: CoreDeps, claim: Claim, row: Claimed, settling: Promise<void>[]): Promise<void> {
  const { settle, report, partners } = claim;
  if (row.key_status !== 'active') {
    await ctx.db`select sl_drop_identification(${row.id}::uuid)`;
    report.dropped++;
    return;
  }
  let resolution: Resolution;
  try {
    resolution = await resolveVisitor(ctx, claim, row);
  } catch (err) {
    if (err instanceof CannotPay) {
      await ctx.db`select sl_drop_identification(${row.id}::uuid)`;
      report.dropped++;
      return;
    }
    ctx.log.warn('visitor lookup failed', { identification: row.id, attempt: row.attempts, error: err instanceof Error ? err.message : String(err) });
    if (row.attempts < MAX_ATTEMPTS) {
      await ctx.db`select sl_release_identification(${row.id}::uuid)`;
      report.retried++;
      return;
    }
    const gaveUp = { status: 'failed', traffic_type: 'unknown', reason: `The lookup failed ${row.attempts} times.`, confidence: 0, country: '' };
    handOver(
      settling,
      settle({ id: row.id, apiKeyId: row.api_key_id, result: gaveUp, cache: null }).then(() => {
        report.failed++;
      }),
    );
    return;
  }
  const v = resolution.verdict;
  // The person lookup is a paid call: only for a key that can still use an ID (asked once per claim).
  const person = isBusiness(v) && (await claim.canPay(row.api_key_id)) ? await personFor(ctx, v, () => claim.excludes(row.id, v)) : null;
  // A fresh lookup is cached for the account (the reserved ranges are not worth a row).
  const cache = resolution.source === 'lookup' ? v : null;
  handOver(
    settling,
    settle({ id: row.id, apiKeyId: row.api_key_id, result: resultOf(v, person), cache }).then((settled) => {
      if (settled.outcome === 'failed') report.failed++;
      else if (settled.outcome === 'excluded') report.excluded++;
      else if (settled.outcome === 'consumed' || settled.outcome === 'not_metered') report.identified++;
      else if (settled.outcome !== 'settled') report.dropped++;
      if (settled.emitted && settled.partner_account_id) partners.add(settled.partner_account_id);
      if (settled.reload_pool_id) startAfterWork(ctx, 'auto-reload', { poolId: settled.reload_pool_id });
    }),
  );
}

/**
 * The tracker worker's second step: every pending identification (queued by aggregation, one per
 * address — an IPv6 visitor's /64 — website and billing period) is resolved through the IP waterfall
 * (the address it was queued with) — the same caches as ip-to-company, under the account's `tracker`
 * results — and settled as `sl_settle_identification` settles one: a business uses one ID and emits
 * `visitor_identified` to the key's webhook when it has one; anything else uses nothing. One
 * tracker key's settles that are ready together share one transaction (settle-identifications.ts). Claims are bounded, leased and taken with SKIP LOCKED, so replicas
 * and the scheduled function share the work; a claim whose worker died is taken over when its
 * lease runs out, and settling twice is a no-op. Runs until a claim comes back short of a full batch, or `maxClaims`.
 */
export async function identifyVisitors({
  ctx,
  input,
}: VerbArgs<{ batchSize?: number; maxClaims?: number; leaseMs?: number }, CoreDeps>): Promise<IdentificationReport> {
  const report: IdentificationReport = { identified: 0, failed: 0, excluded: 0, dropped: 0, retried: 0, claims: 0 };
  // A deployment without the IP data identifies nobody; the identifications wait for one that has it.
  // A server still loading its data finishes that first.
  const ipDeps = ctx.ip ?? (await ctx.ipLoading);
  if (!ipDeps) return report;
  if (!ctx.ip) ctx = { ...ctx, ip: ipDeps };
  const settle = createIdentificationSettler(ctx);
  const batchSize = input.batchSize ?? IDENTIFICATIONS_PER_CLAIM;
  for (let i = 0; i < (input.maxClaims ?? 100); i++) {
    const claimed = await ctx.db<Claimed>`
      select * from sl_claim_identifications(${batchSize}, ${input.leaseMs ?? LEASE_MS})`;
    if (!claimed.length) break;
    report.claims++;
    const payable = new Map<string, Promise<boolean>>();
    const claim: Claim = {
      ipDeps,
      settle,
      report,
      partners: new Set<string>(),
      excludes: claimExclusions(
        ctx,
        claimed.map((r) => r.id),
      ),
      // One statement for the claim's cached results, not one per visitor.
      stored: await readStoredResults(
        ctx,
        'tracker',
        claimed.map((r) => ({ key: r.id, accountId: r.account_id, ip: r.ip })),
      ),
      canPay(apiKeyId) {
        let can = payable.get(apiKeyId);
        if (!can) {
          can = ctx.db<{ ok: boolean }>`select sl_can_identify(${apiKeyId}::uuid) as ok`.then(([r]) => r?.ok === true);
          payable.set(apiKeyId, can);
        }
        return can;
      },
    };
    let next = 0;
    const settling: Promise<void>[] = [];
    const lane = async () => {
      while (next < claimed.length) {
        const row = claimed[next++] as Claimed;
        await identifyOne(ctx, claim, row, settling);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, claimed.length) }, lane));
    // Every settle answered (a refused one rejects here, as it did in its lane) before the claim is done.
    await Promise.all(settling);
    for (const partnerAccountId of claim.partners) startAfterWork(ctx, 'webhook-delivery', { partnerAccountId });
    // A short claim took all that was claimable: what is queued meanwhile is the next run's.
    if (claimed.length < batchSize) break;
  }
  // New identifications are scored against their account's active ICPs at once, not at the next sweep.
  if (report.identified > 0) startAfterWork(ctx, 'icp-scoring');
  return report;
}
