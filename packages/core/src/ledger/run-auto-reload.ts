import type { VerbArgs } from '../kernel/context.ts';

interface ReloadRow {
  id: string;
  account_id: string;
  payment_method_id: string | null;
  payment_customer_id: string | null;
  partner_per_id_pence: number | null;
  auto_reload_topup_amount_ids: number | null;
  reload_started_at: Date | null;
}

declare module '../kernel/after-work.ts' {
  interface AfterWorkKinds {
    /** Charges the pool's reload (runAutoReload), after the consumption that claimed it committed. */
    'auto-reload': { poolId: string };
  }
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
