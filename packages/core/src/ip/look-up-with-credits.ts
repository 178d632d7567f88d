import { startAfterWork } from '../kernel/after-work.ts';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { AppError } from '../kernel/errors.ts';
import { forbiddenAddressClass, parseIp } from '../kernel/net/ip.ts';
import { type Resolution, reservedVerdict, resolveFree, resolveWithProviders } from './resolve-ip.ts';
import { type LookupScope, readCachedResult, storeResult } from './result-cache.ts';
import { type CreditOperation, FREE_TYPES, type Verdict } from './types.ts';

/** Spec: ip-to-company costs 5 credits per business match; ip-to-best-fit 8 per lookup. */
export const COST: Record<CreditOperation, number> = { 'ip-to-company': 5, 'ip-to-best-fit': 8 };

/** Credits a lookup costs once its verdict is known. */
function costOf(operation: CreditOperation, v: Verdict): number {
  if (FREE_TYPES.has(v.traffic_type)) return 0;
  if (operation === 'ip-to-company') return v.identified && v.traffic_type === 'business' ? COST[operation] : 0;
  return COST[operation];
}

/**
 * The 402 before a paid step: before any paid provider is called, the account's credits must cover
 * the most the lookup may cost. A free verdict costs no provider call, so it is checked where it is
 * charged: sl_charge_lookup raises the same status (and body) when the balance does not cover it,
 * as it does should the balance fall between this check and the charge.
 */
async function assertCanPayForLookup(ctx: CoreDeps, scope: { accountId: string; operation: CreditOperation }): Promise<void> {
  const potential = COST[scope.operation];
  const [a] = await ctx.db<{ credit_balance: number }>`select credit_balance from accounts where id = ${scope.accountId}`;
  const balance = a?.credit_balance ?? 0;
  if (balance < potential) {
    throw new AppError('insufficient_credits', `not enough credits: this lookup can cost ${potential}, the balance is ${balance}`, {
      credits_required: potential,
      credit_balance: balance,
    });
  }
}

/**
 * A lookup paid in credits, as ip-to-company and ip-to-best-fit make it, in separate steps: a
 * private or reserved address is answered at once; the account's 7-day result is served from the
 * result cache at no cost; otherwise the address is resolved from the local data, or, once the
 * account can pay (402 before any paid provider is called), by the providers; the fresh verdict is
 * then charged (VPN, hosting and ISP free) and stored for 7 days in one transaction. An identified
 * business is remembered as the key's own lookup (list-visitors), written a moment later.
 */
export async function lookUpWithCredits({
  ctx,
  input,
}: VerbArgs<{
  accountId: string;
  apiKeyId: string;
  operation: CreditOperation;
  ip: string;
  enrich?: { website?: string | undefined; description?: string | undefined } | undefined;
}>): Promise<Resolution> {
  // A server still loading its local data answers this lookup once the data is in.
  const ipDeps = ctx.ip ?? (await ctx.ipLoading);
  if (!ipDeps) throw new AppError('ip_data_unavailable', 'IP identification is not configured on this deployment, or its local data did not load');
  const parsed = parseIp(input.ip);
  if (!parsed) throw new Error(`${JSON.stringify(input.ip)} is not an address, which should have been refused before`);
  const reserved = forbiddenAddressClass(parsed);
  if (reserved) return { source: 'reserved', verdict: reservedVerdict(input.ip, reserved) };

  const scope: LookupScope & { operation: CreditOperation } = { accountId: input.accountId, operation: input.operation, ip: input.ip };
  const cached = await readCachedResult(ctx, ipDeps, scope);
  let r: Resolution;
  if (cached) r = { source: 'cache', verdict: cached };
  else {
    const free = await resolveFree(ipDeps, input.ip, { enrich: input.enrich !== undefined });
    if (free.source === 'lookup') r = free;
    else {
      await assertCanPayForLookup(ctx, scope);
      r = { source: 'lookup', verdict: await resolveWithProviders(ipDeps, input.ip, free.local, input.enrich, free.free) };
    }
    const { reload } = await storeResult(ctx, ipDeps, { ...scope, verdict: r.verdict, cost: costOf(input.operation, r.verdict) });
    if (reload) startAfterWork(ctx, 'credit-reload', { accountId: input.accountId });
  }
  ctx.apiLookups.record(input.apiKeyId, r.verdict);
  return r;
}
