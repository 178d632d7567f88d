import type { VerbArgs } from '../kernel/context.ts';

/**
 * The hourly rollover sweep: children and pools whose period ended, in bounded batches until none
 * is due. Safe to run on several replicas at once (SKIP LOCKED) and idempotent.
 */
export async function rollOverDuePeriods({ ctx, input }: VerbArgs<{ now?: Date; batchSize?: number }>): Promise<{ children: number; pools: number }> {
  const now = (input.now ?? new Date()).toISOString();
  const batch = input.batchSize ?? 500;
  // Each call is one batch in a transaction of its own; a short batch means nothing more was there to take.
  const drain = async (roll: () => Promise<Array<{ n: number }>>) => {
    let total = 0;
    for (;;) {
      const n = (await roll())[0]?.n ?? 0;
      total += n;
      if (n < batch) return total;
    }
  };
  // Pools and children roll side by side: no transaction here holds a pool row and a child row
  // together, and neither waits for the other, so a sweep with nothing due costs one round trip
  // before the final pass, not two.
  const [children, pools] = await Promise.all([
    drain(() => ctx.db<{ n: number }>`select sl_roll_over_children(${now}::timestamptz, ${batch}, true) as n`),
    drain(() => ctx.db<{ n: number }>`select sl_roll_over_pools(${now}::timestamptz, ${batch}) as n`),
  ]);
  // Children skipped because a consumer held them: wait for those rather than leave them an hour.
  const waited = await drain(() => ctx.db<{ n: number }>`select sl_roll_over_children(${now}::timestamptz, ${batch}, false) as n`);
  return { children: children + waited, pools };
}
