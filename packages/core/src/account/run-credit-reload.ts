import type { VerbArgs } from '../kernel/context.ts';
import { dispatchNewEvents } from '../webhooks/delivery.ts';

interface ReloadRow {
  auto_reload_amount: number | null;
  credit_price_pence: number | null;
  payment_method_id: string | null;
  payment_customer_id: string | null;
  credit_reload_started_at: Date | null;
  credit_reload_key: string | null;
}

declare module '../kernel/after-work.ts' {
  interface AfterWorkKinds {
    /** Charges the account's credit reload (runCreditReload), after the debit that claimed it committed. */
    'credit-reload': { accountId: string };
  }
}

/**
 * Charges the credit reload a debit claimed (sl_after_balance_change: one in flight per account).
 * The payment's idempotency key (`credit_reload_key`) is kept until the processor answers for
 * certain, so a charge whose answer was lost, or whose process died before crediting it, is retried
 * as the same charge (the processor answers the first outcome again) and sl_credit_reload credits
 * it once per payment reference. A decline ends the claim and its key, cools the next claim off and
 * tells the account (credits.reload_failed); an unknown outcome only ends the claim, so the next
 * debit below the threshold retries under the same key.
 */
export async function runCreditReload({ ctx, input }: VerbArgs<{ accountId: string }>): Promise<'credited' | 'declined' | 'skipped'> {
  const [a] = await ctx.db<ReloadRow>`
    select auto_reload_amount, credit_price_pence::float8 as credit_price_pence, payment_method_id, payment_customer_id,
      credit_reload_started_at, credit_reload_key
    from accounts where id = ${input.accountId}`;
  if (!a?.credit_reload_started_at || !a.credit_reload_key || !a.auto_reload_amount || !a.credit_price_pence || !a.payment_method_id) {
    return 'skipped';
  }
  const amount = a.auto_reload_amount;
  const idempotencyKey = `credit-reload-${a.credit_reload_key}`;
  let outcome: 'credited' | 'declined' | 'skipped' = 'skipped';
  try {
    const result = await ctx.payments.charge({
      amountPence: Math.ceil(amount * a.credit_price_pence),
      currency: 'gbp',
      paymentMethodId: a.payment_method_id,
      customerId: a.payment_customer_id,
      idempotencyKey,
      description: `Sightline credit auto-reload: ${amount} credits`,
      metadata: { account_id: input.accountId, amount_credits: String(amount) },
    });
    if (result.status === 'succeeded') {
      await ctx.db`select sl_credit_reload(${input.accountId}, ${result.paymentRef}, ${amount})`;
      outcome = 'credited';
    } else {
      ctx.log.warn('credit auto-reload declined', { account_id: input.accountId, code: result.code });
      await ctx.db`select sl_record_credit_reload_decline(${input.accountId}, ${amount}, ${result.code ?? 'declined'})`;
      outcome = 'declined';
    }
  } catch (err) {
    await ctx.db`update accounts set credit_reload_started_at = null where id = ${input.accountId}`;
    ctx.log.error('credit auto-reload failed', { account_id: input.accountId, error: err instanceof Error ? err.message : String(err) });
  }
  if (outcome !== 'skipped') await dispatchNewEvents({ ctx, input: { partnerAccountId: input.accountId } });
  return outcome;
}
