import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { Timestamp } from '../kernel/schemas.ts';

export const KeyUsage = z
  .object({
    metered_by: z.enum(['child_subscription', 'partner_pool', 'none']).openapi({
      description:
        'What the key’s identifications draw on: a managed child’s own subscription, the partner pool (a partner’s own keys), or nothing metered in IDs (every other number is then null)',
    }),
    monthly_id_quota: z.number().int().nullable(),
    pending_monthly_id_quota: z.number().int().nullable().openapi({ description: 'A queued quota decrease, applied when the period rolls' }),
    ids_used_this_period: z.number().int().nullable(),
    topup_balance: z.number().int().nullable(),
    available: z.number().int().nullable().openapi({ description: 'max(0, quota − used) + top-up' }),
    current_period_end: Timestamp.nullable().openapi({ description: 'When ids_used_this_period resets' }),
  })
  .openapi('KeyUsage');
export type KeyUsage = z.infer<typeof KeyUsage>;

interface UsageRow {
  metered_by: 'child_subscription' | 'partner_pool';
  monthly_id_quota: number;
  pending_monthly_id_quota: number | null;
  ids_used_this_period: number;
  topup_balance: number;
  current_period_end: Date | null;
}

/**
 * The IDs the caller's key draws on, as consumption funds them (sl_consume_id): a managed child's
 * own subscription, else its account's pool (a partner's master or own tracker keys), else none.
 * Read-only, for any key of the account, so a child's customer can see its quota without the
 * partner's key.
 */
export async function readKeyUsage({ ctx, input }: VerbArgs<{ key: KeyRecord }>): Promise<KeyUsage> {
  const [row] = await ctx.db<UsageRow>`
    select 'child_subscription' as metered_by, s.monthly_id_quota, s.pending_monthly_id_quota, s.ids_used_this_period,
           s.topup_balance, s.current_period_end
    from child_subscriptions s where s.api_key_id = ${input.key.apiKeyId}
    union all
    select 'partner_pool', p.monthly_id_quota, p.pending_monthly_id_quota, p.ids_used_this_period, p.topup_balance, p.current_period_end
    from pools p
    where p.account_id = ${input.key.accountId}
      and not exists (select 1 from child_subscriptions s where s.api_key_id = ${input.key.apiKeyId})
    limit 1`;
  if (!row) {
    return {
      metered_by: 'none',
      monthly_id_quota: null,
      pending_monthly_id_quota: null,
      ids_used_this_period: null,
      topup_balance: null,
      available: null,
      current_period_end: null,
    };
  }
  return {
    metered_by: row.metered_by,
    monthly_id_quota: row.monthly_id_quota,
    pending_monthly_id_quota: row.pending_monthly_id_quota,
    ids_used_this_period: row.ids_used_this_period,
    topup_balance: row.topup_balance,
    available: Math.max(0, row.monthly_id_quota - row.ids_used_this_period) + row.topup_balance,
    current_period_end: row.current_period_end ? new Date(row.current_period_end).toISOString() : null,
  };
}
