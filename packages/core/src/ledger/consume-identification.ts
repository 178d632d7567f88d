import { startAfterWork } from '../kernel/after-work.ts';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { runAutoReload } from './run-auto-reload.ts';

export type ConsumeOutcome = 'consumed' | 'suspended' | 'revoked' | 'canceled' | 'no_ids' | 'pool_exhausted' | 'not_metered' | 'unknown_key';

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
 * child.suspended exactly once. When the pool crosses its auto-reload threshold the reload is
 * started as after-work; when a prepaid pool is empty the reload runs first, in this request, and
 * the consumption is tried once more.
 */
export async function consumeIdentification({ ctx, input }: VerbArgs<{ apiKeyId: string }>): Promise<ConsumeResult> {
  let row = await consumeOnce(ctx, input.apiKeyId);
  if (row.emitted && row.partner_account_id) startAfterWork(ctx, 'webhook-delivery', { partnerAccountId: row.partner_account_id });
  if (row.reload_pool_id) {
    const poolId = row.reload_pool_id;
    if (row.outcome === 'pool_exhausted') {
      if ((await runAutoReload({ ctx, input: { poolId } })) === 'credited') row = await consumeOnce(ctx, input.apiKeyId);
    } else {
      startAfterWork(ctx, 'auto-reload', { poolId });
    }
  }
  return { outcome: row.outcome, child_source: row.child_source, pool_source: row.pool_source };
}
