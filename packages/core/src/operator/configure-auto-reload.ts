import type { VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import { poolOf } from './account-records.ts';

/** Auto-reload settings of a pool; any subset changes. */
export async function configureAutoReload({
  ctx,
  input,
}: VerbArgs<{
  accountId: string;
  enabled?: boolean;
  thresholdIds?: number;
  topupAmountIds?: number;
  paymentMethodId?: string;
  customerId?: string;
}>) {
  const poolId = await poolOf(ctx, input.accountId);
  const [row] = await sqlCall(
    () => ctx.db<{ enabled: boolean; threshold_ids: number | null; topup_amount_ids: number | null; payment_method_id: string | null }>`
      update pools set
        auto_reload_enabled = coalesce(${input.enabled ?? null}::boolean, auto_reload_enabled),
        auto_reload_threshold_ids = coalesce(${input.thresholdIds ?? null}::int, auto_reload_threshold_ids),
        auto_reload_topup_amount_ids = coalesce(${input.topupAmountIds ?? null}::int, auto_reload_topup_amount_ids),
        payment_method_id = coalesce(${input.paymentMethodId ?? null}::text, payment_method_id),
        payment_customer_id = coalesce(${input.customerId ?? null}::text, payment_customer_id),
        -- A new card starts a new decline streak.
        consecutive_declines = case when ${input.paymentMethodId ?? null}::text is null then consecutive_declines else 0 end
      where id = ${poolId}
      returning auto_reload_enabled as enabled, auto_reload_threshold_ids as threshold_ids,
                auto_reload_topup_amount_ids as topup_amount_ids, payment_method_id`,
  );
  return { account_id: input.accountId, auto_reload: row };
}
