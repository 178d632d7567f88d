import { startCreditReload } from '../account/run-credit-reload.ts';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { AppError, sqlCall } from '../kernel/errors.ts';
import {
  COST,
  type CreditOperation,
  FREE_TYPES,
  lookupCacheKey,
  type Resolution,
  type ResolveIpInput,
  rememberResult,
  resolveIp,
  type SharedEntry,
  type Verdict,
} from './resolve-ip.ts';

/** Spec: results are cached for 7 days; a repeat within them is served at no extra cost. */
const CACHE_TTL_SECONDS = 7 * 24 * 3600;

/** Credits a lookup costs once its verdict is known. */
function costOf(operation: CreditOperation, v: Verdict): number {
  if (FREE_TYPES.has(v.traffic_type)) return 0;
  if (operation === 'ip-to-company') return v.identified && v.traffic_type === 'business' ? COST[operation] : 0;
  return COST[operation];
}

async function balanceOf(ctx: CoreDeps, accountId: string): Promise<number> {
  const [a] = await ctx.db<{ credit_balance: number }>`select credit_balance from accounts where id = ${accountId}`;
  return a?.credit_balance ?? 0;
}

/**
 * The 402 of a lookup that needs the paid providers: refused before any provider is called when the
 * account's credits cannot cover the most the lookup may cost.
 */
export async function assertCanPayForLookup({ ctx, input }: VerbArgs<{ accountId: string; operation: CreditOperation }>): Promise<void> {
  const potential = COST[input.operation];
  const balance = await balanceOf(ctx, input.accountId);
  if (balance < potential) {
    throw new AppError('insufficient_credits', `not enough credits: this lookup can cost ${potential}, the balance is ${balance}`, {
      credits_required: potential,
      credit_balance: balance,
    });
  }
}

/**
 * Pays for a fresh verdict in credits and stores it for 7 days, in one transaction
 * (`sl_charge_lookup`): free traffic types cost nothing; a business match costs the operation's
 * price. A concurrent first lookup of the same IP may have stored its result first, and that one
 * stands until it expires (migrations/functions/ip/sl_charge_lookup.sql), so this process and the shared cache copy the stored row.
 */
export async function chargeLookupCredits({
  ctx,
  input,
}: VerbArgs<{ accountId: string; operation: CreditOperation; verdict: Verdict }>): Promise<void> {
  const { verdict } = input;
  const cost = costOf(input.operation, verdict);
  const [kept] = await sqlCall(
    () => ctx.db<{ result: string; ttl_ms: number; reload: boolean }>`
      select result::text as result, ttl_ms, reload from sl_charge_lookup(${input.accountId}, ${input.operation}, ${verdict.ip}::inet, ${cost},
                                          ${JSON.stringify(verdict)}::text::jsonb, ${`${CACHE_TTL_SECONDS} seconds`}::interval)`,
  );
  if (kept?.reload) startCreditReload(ctx, input.accountId);
  const ipDeps = ctx.ip;
  if (!kept || !ipDeps) return;
  const cacheKey = lookupCacheKey(input.operation, input.accountId, verdict.ip);
  const result = JSON.parse(kept.result) as Verdict;
  const expiresAt = Date.now() + kept.ttl_ms;
  rememberResult(ipDeps, cacheKey, result, expiresAt);
  const shared: SharedEntry = { expires_at: expiresAt, result };
  await ipDeps.sharedResults?.set(cacheKey, JSON.stringify(shared), Math.ceil(kept.ttl_ms / 1000)).catch(() => undefined);
}

/**
 * A lookup paid in credits, as ip-to-company and ip-to-best-fit make it: resolved (402 before any
 * paid provider when the account cannot pay), then, when it was a fresh lookup, charged and stored.
 * An identified business is remembered as the key's own lookup (list-visitors), written a moment later.
 */
export async function lookUpWithCredits({
  ctx,
  input,
}: VerbArgs<{
  accountId: string;
  apiKeyId: string;
  operation: CreditOperation;
  ip: string;
  enrich?: ResolveIpInput['enrich'];
}>): Promise<Resolution> {
  const scope = { accountId: input.accountId, operation: input.operation };
  const r = await resolveIp({
    ctx,
    input: { ...scope, ip: input.ip, beforePaidLookup: () => assertCanPayForLookup({ ctx, input: scope }), enrich: input.enrich },
  });
  if (r.source === 'lookup') await chargeLookupCredits({ ctx, input: { ...scope, verdict: r.verdict } });
  if (r.source !== 'reserved') ctx.apiLookups.record(input.apiKeyId, r.verdict);
  return r;
}
