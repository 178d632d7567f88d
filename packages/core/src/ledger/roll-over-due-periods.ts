import type { VerbArgs } from '../context.ts';

/**
 * The hourly rollover sweep: children and pools whose period ended, in bounded batches until none
 * is due. Safe to run on several replicas at once (SKIP LOCKED) and idempotent.
 */
export async function rollOverDuePeriods({ ctx, input }: VerbArgs<{ now?: Date; batchSize?: number }>): Promise<{ children: number; pools: number }> {
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
