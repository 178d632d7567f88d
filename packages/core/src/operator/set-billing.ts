import type { VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import { poolOf } from './account-records.ts';

/** Billing mode, per-ID rate and saved card of a pool. */
export async function setBilling({
  ctx,
  input,
}: VerbArgs<{ accountId: string; mode?: 'prepaid' | 'invoice_monthly'; perIdPence?: number; card?: string; quota?: number }>) {
  const poolId = await poolOf(ctx, input.accountId);
  const [row] = await sqlCall(
    () => ctx.db<{ pool_billing_mode: string; partner_per_id_pence: number | null; payment_method_id: string | null; monthly_id_quota: number }>`
      update pools set
        pool_billing_mode = coalesce(${input.mode ?? null}::text, pool_billing_mode),
        partner_per_id_pence = coalesce(${input.perIdPence ?? null}::numeric, partner_per_id_pence),
        payment_method_id = coalesce(${input.card ?? null}::text, payment_method_id),
        -- Like a child's: an increase applies now, a decrease waits for the next period.
        monthly_id_quota = greatest(monthly_id_quota, coalesce(${input.quota ?? null}::int, monthly_id_quota)),
        pending_monthly_id_quota = case
          when ${input.quota ?? null}::int is null then pending_monthly_id_quota
          when ${input.quota ?? null}::int < monthly_id_quota then ${input.quota ?? null}::int
          else null end
      where id = ${poolId}
      returning pool_billing_mode, partner_per_id_pence::float8 as partner_per_id_pence, payment_method_id, monthly_id_quota`,
  );
  return { account_id: input.accountId, pool: row };
}
