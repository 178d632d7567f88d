import type { VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';

/**
 * Operator: what a credit auto-reload buys and how it is paid — the credits per reload, the price
 * of one credit in pence, and the saved card (and customer) the payment port charges. The account
 * itself turns auto-reload on and sets its threshold (api-update-settings), which it may only do
 * once this is in place.
 */
export async function configureCreditReload({
  ctx,
  input,
}: VerbArgs<{ accountId: string; amount: number; pricePence: number; paymentMethodId: string; customerId?: string }>) {
  const [row] = await ctx.db<{
    auto_reload_enabled: boolean;
    auto_reload_threshold: number;
    auto_reload_amount: number;
    credit_price_pence: number;
    payment_method_id: string;
    payment_customer_id: string | null;
  }>`
    update accounts set
      auto_reload_amount = ${input.amount},
      credit_price_pence = ${input.pricePence},
      payment_method_id = ${input.paymentMethodId},
      payment_customer_id = coalesce(${input.customerId ?? null}::text, payment_customer_id),
      -- A new set-up ends the cool-off after declines: the next debit below the threshold tries it.
      credit_reload_declines = 0,
      credit_reload_declined_at = null
    where id = ${input.accountId}
    returning auto_reload_enabled, auto_reload_threshold, auto_reload_amount, credit_price_pence::float8 as credit_price_pence,
              payment_method_id, payment_customer_id`;
  if (!row) throw notFound(`no account ${input.accountId}`);
  return { account_id: input.accountId, credit_reload: row };
}
