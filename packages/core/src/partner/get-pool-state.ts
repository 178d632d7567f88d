import { z } from '@hono/zod-openapi';
import { type BatchedRead, createBatchedRead } from '../kernel/batched-read.ts';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { forbidden } from '../kernel/errors.ts';
import { Timestamp } from '../kernel/schemas.ts';
import type { Sql } from '../kernel/sql.ts';

export const PoolState = z.object({
  pool: z.object({
    monthly_id_quota: z.number().int(),
    ids_used_this_period: z.number().int(),
    topup_balance: z.number().int(),
    available: z.number().int(),
    current_period_start: Timestamp.nullable(),
    current_period_end: Timestamp.nullable(),
    pool_billing_mode: z.enum(['prepaid', 'invoice_monthly']),
    partner_per_id_pence: z.number().nullable(),
  }),
  auto_reload: z.object({
    enabled: z.boolean(),
    threshold_ids: z.number().int().nullable(),
    topup_amount_ids: z.number().int().nullable(),
    payment_method_id: z.string().nullable(),
    last_declined_at: Timestamp.nullable(),
    consecutive_declines: z.number().int(),
  }),
  recent_topups: z.array(z.object({ amount_ids: z.number().int(), created_at: Timestamp, status: z.string() })),
});
export type PoolState = z.infer<typeof PoolState>;

interface PoolRow {
  account_id: string;
  monthly_id_quota: number;
  ids_used_this_period: number;
  topup_balance: number;
  current_period_start: Date | null;
  current_period_end: Date | null;
  pool_billing_mode: 'prepaid' | 'invoice_monthly';
  partner_per_id_pence: number | null;
  auto_reload_enabled: boolean;
  auto_reload_threshold_ids: number | null;
  auto_reload_topup_amount_ids: number | null;
  payment_method_id: string | null;
  last_declined_at: Date | null;
  consecutive_declines: number;
  /** [[amount_ids, created_at in epoch ms, status], …], newest first. */
  recent_topups: string | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/**
 * Pools by partner account, the reads that arrive together sharing one statement (batched-read.ts):
 * a partner's backend or dashboard polling from many connections, and many partners at once, cost
 * Postgres and this process one round trip per batch instead of one per request. One reader per
 * database handle, so a read is always sent on the handle its caller gave.
 */
const readers = new WeakMap<Sql, BatchedRead<string, PoolRow>>();

function poolReader(db: Sql): BatchedRead<string, PoolRow> {
  let reader = readers.get(db);
  if (!reader) {
    reader = createBatchedRead({ read: (accountIds) => readPools(db, accountIds) });
    readers.set(db, reader);
  }
  return reader;
}

/** The pools of these partner accounts (UUIDs, as authentication found them), by account. */
async function readPools(db: Sql, accountIds: string[]): Promise<Map<string, PoolRow>> {
  const rows = await db<PoolRow>`
    select p.account_id::text as account_id,
           p.monthly_id_quota, p.ids_used_this_period, p.topup_balance,
           p.current_period_start, p.current_period_end, p.pool_billing_mode,
           p.partner_per_id_pence::float8 as partner_per_id_pence,
           p.auto_reload_enabled, p.auto_reload_threshold_ids, p.auto_reload_topup_amount_ids,
           p.payment_method_id, p.last_declined_at, p.consecutive_declines,
           -- Times as epoch milliseconds (truncated, like every timestamp the API shows), formatted
           -- in JS: to_char costs Postgres about 13 µs a call, and this is the hottest partner read.
           (select json_agg(json_build_array(t.amount_ids, floor(extract(epoch from t.created_at) * 1000), t.status)
                            order by t.created_at desc, t.id desc)
            from (select amount_ids, created_at, id, status from topups
                  where pool_id = p.id and child_api_key_id is null and status in ('completed', 'refunded')
                  order by created_at desc, id desc limit 10) t)::text as recent_topups
    from pools p
    where p.account_id = any(string_to_array(${accountIds.join(',')}, ',')::uuid[])`;
  return new Map(rows.map((r) => [r.account_id, r]));
}

/**
 * The partner's pool, auto-reload settings and last 10 completed top-ups, read by one read-only
 * statement shared with the pool reads that arrive with it. 403 when the partner has no pool
 * subscription.
 */
export async function getPoolState({ ctx }: VerbArgs<Record<string, never>, PartnerCtx>): Promise<PoolState> {
  const p = await poolReader(ctx.db)(ctx.caller.accountId);
  if (!p) throw forbidden('this partner has no pool subscription');
  return {
    pool: {
      monthly_id_quota: p.monthly_id_quota,
      ids_used_this_period: p.ids_used_this_period,
      topup_balance: p.topup_balance,
      available: Math.max(0, p.monthly_id_quota - p.ids_used_this_period) + p.topup_balance,
      current_period_start: iso(p.current_period_start),
      current_period_end: iso(p.current_period_end),
      pool_billing_mode: p.pool_billing_mode,
      partner_per_id_pence: p.partner_per_id_pence,
    },
    auto_reload: {
      enabled: p.auto_reload_enabled,
      threshold_ids: p.auto_reload_threshold_ids,
      topup_amount_ids: p.auto_reload_topup_amount_ids,
      payment_method_id: p.payment_method_id,
      last_declined_at: iso(p.last_declined_at),
      consecutive_declines: p.consecutive_declines,
    },
    recent_topups: p.recent_topups
      ? (JSON.parse(p.recent_topups) as [number, number, PoolState['recent_topups'][number]['status']][]).map(([amount_ids, ms, status]) => ({
          amount_ids,
          created_at: new Date(ms).toISOString(),
          status,
        }))
      : [],
  };
}
