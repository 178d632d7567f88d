import type { VerbArgs } from '../kernel/context.ts';
import { AppError } from '../kernel/errors.ts';

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
    throw new AppError('insufficient_ids', 'the partner pool has no identifications left (no monthly quota and no top-up balance)');
  }
}
