import type { CoreDeps, VerbArgs } from '../context.ts';
import { AppError, badRequest, notFound, sqlCall } from '../errors.ts';
import { dispatchNewEvents } from '../webhooks/delivery.ts';

export type ConsumeOutcome =
  | 'consumed'
  | 'suspended'
  | 'revoked'
  | 'canceled'
  | 'no_ids'
  | 'pool_exhausted'
  | 'not_metered'
  | 'unknown_key';

export interface ConsumeResult {
  outcome: ConsumeOutcome;
  child_source: 'quota' | 'topup' | null;
  pool_source: 'quota' | 'topup' | 'overage' | null;
}

interface ConsumeRow extends ConsumeResult {
  reload_pool_id: string | null;
  partner_account_id: string | null;
  emitted: boolean;
}

async function consumeOnce(ctx: CoreDeps, apiKeyId: string): Promise<ConsumeRow> {
  const [row] = await ctx.db<ConsumeRow>`select * from sl_consume_id(${apiKeyId})`;
  if (!row) throw new Error('sl_consume_id returned no row');
  return row;
}

/**
 * Uses one ID for an identification by tracker key `apiKeyId` (one SQL function, one transaction):
 * child quota first (which also draws on the pool: quota, then top-up, then invoice overage), then
 * the child's top-up. The consumption that uses the last ID suspends the child and emits
 * child.suspended exactly once. When the pool crosses its auto-reload threshold the reload runs in
 * the background; when a prepaid pool is empty the reload runs first and the consumption is tried
 * once more.
 */
export async function consumeIdentification({ ctx, input }: VerbArgs<{ apiKeyId: string }>): Promise<ConsumeResult> {
  let row = await consumeOnce(ctx, input.apiKeyId);
  if (row.emitted && row.partner_account_id) {
    const partnerAccountId = row.partner_account_id;
    ctx.background('webhooks', () => dispatchNewEvents({ ctx, input: { partnerAccountId } }));
  }
  if (row.reload_pool_id) {
    const poolId = row.reload_pool_id;
    if (row.outcome === 'pool_exhausted') {
      if ((await runAutoReload({ ctx, input: { poolId } })) === 'credited') row = await consumeOnce(ctx, input.apiKeyId);
    } else {
      ctx.background('auto-reload', () => runAutoReload({ ctx, input: { poolId } }));
    }
  }
  return { outcome: row.outcome, child_source: row.child_source, pool_source: row.pool_source };
}

interface ReloadRow {
  id: string;
  account_id: string;
  payment_method_id: string | null;
  payment_customer_id: string | null;
  partner_per_id_pence: number | null;
  auto_reload_topup_amount_ids: number | null;
  reload_started_at: Date | null;
}

/**
 * Charges one auto-reload that sl_claim_reload marked in flight (one per pool). The idempotency key
 * is tied to the claim, so a retried request cannot charge twice; a success credits the pool through
 * sl_credit_topup (once per payment reference), a decline grows the decline streak.
 */
export async function runAutoReload({ ctx, input }: VerbArgs<{ poolId: string }>): Promise<'credited' | 'declined' | 'skipped'> {
  const [p] = await ctx.db<ReloadRow>`
    select id, account_id, payment_method_id, payment_customer_id, partner_per_id_pence::float8 as partner_per_id_pence,
           auto_reload_topup_amount_ids, reload_started_at
    from pools where id = ${input.poolId}`;
  if (!p?.reload_started_at || !p.payment_method_id || !p.partner_per_id_pence || !p.auto_reload_topup_amount_ids) {
    return 'skipped';
  }
  const amount = p.auto_reload_topup_amount_ids;
  const idempotencyKey = `reload-${p.id}-${new Date(p.reload_started_at).getTime()}`;
  try {
    const result = await ctx.payments.charge({
      amountPence: Math.ceil(amount * p.partner_per_id_pence),
      currency: 'gbp',
      paymentMethodId: p.payment_method_id,
      customerId: p.payment_customer_id,
      idempotencyKey,
      description: `Sightline auto-reload: ${amount} IDs`,
      metadata: { pool_id: p.id, account_id: p.account_id, amount_ids: String(amount) },
    });
    if (result.status === 'succeeded') {
      await ctx.db`select sl_credit_topup(${result.paymentRef}, ${p.id}, ${null}, ${amount}, 'auto_reload')`;
      return 'credited';
    }
    ctx.log.warn('auto-reload declined', { pool_id: p.id, code: result.code });
    await ctx.db`select sl_record_reload_decline(${p.id}, ${result.paymentRef ?? idempotencyKey}, ${amount})`;
    return 'declined';
  } catch (err) {
    // Unknown outcome (network, processor outage): release the claim so a later consumption retries
    // with a new claim; the processor's idempotency key protects the earlier attempt.
    await ctx.db`update pools set reload_started_at = null where id = ${p.id}`;
    ctx.log.error('auto-reload failed', { pool_id: p.id, error: err instanceof Error ? err.message : String(err) });
    return 'skipped';
  }
}

/**
 * Credits a completed top-up purchase to a pool or a child, once per payment reference: a replayed
 * payment confirmation returns `credited: false` and changes nothing.
 */
export async function creditTopup({
  ctx,
  input,
}: VerbArgs<{ paymentRef: string; poolAccountId?: string; childApiKeyId?: string; amount: number; source: 'operator' | 'purchase' | 'auto_reload' }>) {
  if (!Number.isInteger(input.amount) || input.amount <= 0) throw badRequest('amount must be a positive integer');
  let poolId: string | null = null;
  if (input.poolAccountId) {
    const [p] = await ctx.db<{ id: string }>`select id from pools where account_id::text = ${input.poolAccountId}`;
    if (!p) throw notFound(`account ${input.poolAccountId} has no pool`);
    poolId = p.id;
  }
  if (!poolId && !input.childApiKeyId) throw badRequest('a top-up goes to a pool or to a child');
  const [row] = await sqlCall(
    () => ctx.db<{ credited: boolean }>`
      select sl_credit_topup(${input.paymentRef}, ${poolId}, ${input.childApiKeyId ?? null}, ${input.amount}, ${input.source}) as credited`,
  );
  return { credited: row?.credited ?? false };
}

/**
 * The hourly rollover sweep: children and pools whose period ended, in bounded batches until none
 * is due. Safe to run on several replicas at once (SKIP LOCKED) and idempotent.
 */
export async function rollOverDuePeriods({
  ctx,
  input,
}: VerbArgs<{ now?: Date; batchSize?: number }>): Promise<{ children: number; pools: number }> {
  const now = (input.now ?? new Date()).toISOString();
  const batch = input.batchSize ?? 500;
  let children = 0;
  let pools = 0;
  for (;;) {
    const [r] = await ctx.db<{ n: number }>`select sl_roll_over_children(${now}::timestamptz, ${batch}, true) as n`;
    children += r?.n ?? 0;
    if ((r?.n ?? 0) < batch) break;
  }
  // Children skipped because a consumer held them: wait for those rather than leave them an hour.
  for (;;) {
    const [r] = await ctx.db<{ n: number }>`select sl_roll_over_children(${now}::timestamptz, ${batch}, false) as n`;
    children += r?.n ?? 0;
    if ((r?.n ?? 0) < batch) break;
  }
  for (;;) {
    const [r] = await ctx.db<{ n: number }>`select sl_roll_over_pools(${now}::timestamptz, ${batch}) as n`;
    pools += r?.n ?? 0;
    if ((r?.n ?? 0) < batch) break;
  }
  return { children, pools };
}

/**
 * The out-of-IDs guard of partner endpoints (402): a prepaid pool with nothing available.
 * Monthly-invoice pools may go over, and a partner without a pool has nothing to guard.
 */
export async function assertPoolHasIds({ ctx, input }: VerbArgs<{ accountId: string }>): Promise<void> {
  const [p] = await ctx.db<{ exhausted: boolean }>`
    select pool_billing_mode = 'prepaid'
           and greatest(0, monthly_id_quota - ids_used_this_period) + topup_balance = 0 as exhausted
    from pools where account_id = ${input.accountId}`;
  if (p?.exhausted) {
    throw new AppError(402, 'the partner pool has no identifications left (no monthly quota and no top-up balance)');
  }
}
