import { createRoute, z } from '@hono/zod-openapi';
import { partnerCtx, updateChild, openapi, type FunctionDefinition, policies, errorResponse } from '@sightline/core';
import { ChildStatus, jsonBody, PositiveDays, Quota, Timestamp, Uuid, WebhookSecret } from '../_shared/schemas.ts';

export const UpdateChildBody = z
  .object({
    child_api_key_id: Uuid,
    name: z.string().max(200).optional(),
    monthly_id_quota: Quota.optional().openapi({ description: 'An increase applies now; a decrease is queued for the next period' }),
    status: ChildStatus.optional(),
    extend_period_days: PositiveDays.optional().openapi({ description: 'New current_period_end = max(current_period_end, now) + days' }),
    webhook_url: z.string().max(2048).nullable().optional().openapi({ description: 'A URL sets or updates; null clears URL and secret' }),
    webhook_secret: WebhookSecret.nullable().optional().openapi({ description: 'A string sets the secret; null mints a fresh one; omitted keeps it' }),
  })
  .strict()
  .openapi('UpdateChildRequest');

export const UpdateChildResponse = z
  .object({
    success: z.literal(true),
    child: z.object({
      id: Uuid,
      user_id: Uuid,
      name: z.string(),
      status: z.string(),
      created_at: Timestamp,
      webhook_url: z.string().nullable(),
      parent_api_key_id: Uuid,
    }),
    subscription: z.object({
      id: Uuid,
      kind: z.string(),
      monthly_id_quota: z.number().int(),
      ids_used_this_period: z.number().int(),
      topup_balance: z.number().int(),
      current_period_end: Timestamp,
      status: z.string(),
    }),
    webhook: z
      .object({ url: z.string().nullable(), secret: z.string() })
      .optional()
      .openapi({ description: 'Present only when a secret was minted in this call' }),
  })
  .openapi('UpdateChildResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Update any subset of a child’s configuration',
  request: { body: jsonBody(UpdateChildBody) },
  responses: {
    200: { description: 'The updated child', content: { 'application/json': { schema: UpdateChildResponse } } },
    404: errorResponse('No such child key'),
  },
});

export const partnerUpdateChild: FunctionDefinition = {
  name: 'partner-update-child',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) => c.json(await updateChild({ ctx: partnerCtx(c), input: c.req.valid('json') }), 200));
  },
};
