import { createRoute, z } from '@hono/zod-openapi';
import { partnerCtx, transferTopup, openapi, type FunctionDefinition, policies, errorResponse } from '@sightline/core';
import { jsonBody, Uuid, whenGiven } from '../_shared/schemas.ts';

export const TransferBody = z
  .object({
    child_api_key_id: Uuid,
    amount: z.number(whenGiven('must be a positive integer')).int('must be a positive integer').positive('must be a positive integer').max(1_000_000_000),
  })
  .strict()
  .openapi('TransferTopupRequest');

export const TransferResponse = z
  .object({
    success: z.literal(true),
    partner_topup_balance: z.number().int(),
    child_topup_balance: z.number().int(),
    transferred: z.number().int(),
  })
  .openapi('TransferTopupResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Move top-up IDs from the partner to a child, atomically',
  request: { body: jsonBody(TransferBody) },
  responses: {
    200: { description: 'Both balances after the move', content: { 'application/json': { schema: TransferResponse } } },
    402: {
      description: 'The partner’s top-up balance is below amount (or the pool has no IDs left)',
      content: {
        'application/json': {
          schema: z.object({
            success: z.literal(false),
            error: z.string(),
            partner_topup_balance: z.number().int().optional(),
            requested_amount: z.number().int().optional(),
          }),
        },
      },
    },
    404: errorResponse('Child missing, or partner or child has no subscription row'),
  },
});

export const partnerTransferTopup: FunctionDefinition = {
  name: 'partner-transfer-topup',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) => c.json(await transferTopup({ ctx: partnerCtx(c), input: c.req.valid('json') }), 200));
  },
};
