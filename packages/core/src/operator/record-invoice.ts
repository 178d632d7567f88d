import type { VerbArgs } from '../kernel/context.ts';
import { poolOf } from './account-records.ts';

/** Records an outstanding invoice against a pool (e.g. one raised outside Sightline). */
export async function recordInvoice({ ctx, input }: VerbArgs<{ accountId: string; amountPence: number; ids?: number }>) {
  const poolId = await poolOf(ctx, input.accountId);
  const [row] = await ctx.db<{ id: string }>`
    insert into invoices (pool_id, period_start, period_end, ids_used, amount_pence)
    select id, coalesce(current_period_start, now()), now(), ${input.ids ?? 0}, ${input.amountPence}
    from pools where id = ${poolId}
    returning id`;
  return { invoice_id: row?.id, status: 'outstanding' };
}
