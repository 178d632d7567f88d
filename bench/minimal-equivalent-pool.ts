import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import postgres from 'postgres';

/**
 * What partner-pool-state is measured against (issue 30): the least a user would write with the
 * same libraries to answer the same request. One GET route: the key from `x-access-key` found in a
 * Map (EQUIV_KEYS: key → partner account id), then one postgres.js query per request reading the
 * same pool and last ten top-ups as ours, shaped into the same JSON. No limits, metering, request
 * ids or batching. Same database (DATABASE_URL) and pool size (DATABASE_POOL_MAX) as our server,
 * bundled and run like the production host, in a process of its own.
 */
const keys = new Map<string, string>(Object.entries(JSON.parse(process.env.EQUIV_KEYS ?? '{}') as Record<string, string>));
const sql = postgres(process.env.DATABASE_URL ?? '', { max: Number(process.env.DATABASE_POOL_MAX ?? 2) });

interface PoolRow {
  monthly_id_quota: number;
  ids_used_this_period: number;
  topup_balance: number;
  current_period_start: Date | null;
  current_period_end: Date | null;
  pool_billing_mode: string;
  partner_per_id_pence: number | null;
  auto_reload_enabled: boolean;
  auto_reload_threshold_ids: number | null;
  auto_reload_topup_amount_ids: number | null;
  payment_method_id: string | null;
  last_declined_at: Date | null;
  consecutive_declines: number;
  recent_topups: { amount_ids: number; created_at: string; status: string }[] | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

const app = new Hono();
app.get('/pool-state', async (c) => {
  const accountId = keys.get(c.req.header('x-access-key') ?? '');
  if (!accountId) return c.json({ success: false, error: 'missing or unknown x-access-key' }, 401);
  const [p] = await sql<PoolRow[]>`
    select p.monthly_id_quota, p.ids_used_this_period, p.topup_balance,
           p.current_period_start, p.current_period_end, p.pool_billing_mode,
           p.partner_per_id_pence::float8 as partner_per_id_pence,
           p.auto_reload_enabled, p.auto_reload_threshold_ids, p.auto_reload_topup_amount_ids,
           p.payment_method_id, p.last_declined_at, p.consecutive_declines,
           (select json_agg(json_build_object('amount_ids', t.amount_ids, 'created_at', t.created_at, 'status', t.status)
                            order by t.created_at desc, t.id desc)
            from (select amount_ids, created_at, id, status from topups
                  where pool_id = p.id and child_api_key_id is null and status in ('completed', 'refunded')
                  order by created_at desc, id desc limit 10) t) as recent_topups
    from pools p where p.account_id = ${accountId}`;
  if (!p) return c.json({ success: false, error: 'this partner has no pool subscription' }, 403);
  return c.json({
    success: true,
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
    recent_topups: (p.recent_topups ?? []).map((t) => ({ ...t, created_at: new Date(t.created_at).toISOString() })),
  });
});
serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: process.env.HOST ?? '127.0.0.1' }, (info: AddressInfo) => {
  process.stdout.write(`minimal equivalent listening on http://localhost:${info.port}\n`);
});
process.on('SIGTERM', () => {
  void sql.end({ timeout: 1 }).finally(() => process.exit(0));
});
