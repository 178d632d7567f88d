import { createRoute, z } from '@hono/zod-openapi';
import { getPoolState, partnerCtx, openapi, type FunctionDefinition, policies } from '@sightline/core';

const Timestamp = z.string().openapi({ format: 'date-time' });

export const PoolStateResponse = z
  .object({
    success: z.literal(true),
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
  })
  .openapi('PoolState');
export type PoolStateResponse = z.infer<typeof PoolStateResponse>;

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Read the partner pool, auto-reload settings and recent top-ups',
  description: 'Read-only. Exempt from the out-of-IDs 402 and from the API-wide rate limit.',
  responses: {
    200: { description: 'The pool state', content: { 'application/json': { schema: PoolStateResponse } } },
  },
});

export const partnerPoolState: FunctionDefinition = {
  name: 'partner-pool-state',
  mount: 'functions',
  method: 'GET',
  policy: policies.partnerPoolRead,
  register(app) {
    openapi(app, route, async (c) => c.json(await getPoolState({ ctx: partnerCtx(c), input: {} }), 200));
  },
};
