import { createRoute, z } from '@hono/zod-openapi';
import {
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  partnerCtx,
  policies,
  TopupTransferred,
  TransferTopupInput,
  transferTopup,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const TransferResponse = succeeded(TopupTransferred, 'TransferTopupResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Move top-up IDs from the partner to a child, atomically',
  request: { body: jsonBody(TransferTopupInput) },
  responses: {
    200: jsonAnswer('Both balances after the move', TransferResponse),
    402: errorResponse('The partner’s top-up balance is below amount (or the pool has no IDs left)', ['insufficient_topup'], {
      partner_topup_balance: z.number().int().optional(),
      requested_amount: z.number().int().optional(),
    }),
    404: errorResponse('Child missing, or partner or child has no subscription row', ['not_found']),
  },
});

export const partnerTransferTopup: FunctionDefinition = {
  name: 'partner-transfer-topup',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await transferTopup({ ctx: partnerCtx(c), input: c.req.valid('json') })) }, 200),
    );
  },
};
