import { createRoute, z } from '@hono/zod-openapi';
import {
  errorResponse,
  type FunctionDefinition,
  Icp,
  IcpActionRequest,
  IcpDeleted,
  idempotentUserOf,
  jsonAnswer,
  openapi,
  Product,
  policies,
  runIcpAction,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const IcpResponse = succeeded(Icp, 'IcpResponse');
export const IcpListResponse = succeeded(z.object({ data: z.array(Icp) }), 'IcpListResponse');
export const ProductResponse = succeeded(Product, 'ProductResponse');
export const ProductListResponse = succeeded(z.object({ data: z.array(Product) }), 'ProductListResponse');
export const IcpDeletedResponse = succeeded(IcpDeleted, 'IcpDeletedResponse');
export const ProcessingResponse = z
  .object({ success: z.literal(true), status: z.literal('processing'), message: z.string() })
  .openapi('IcpActionProcessing');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'ICPs and products: create, list, review, activate, pause, regenerate, delete',
  description:
    'Dispatches on `action`. Every action but list_icps and list_products is idempotent under x-idempotency-key: a repeat while the first is in progress answers 202, a repeat after it the original answer (status and body), the same key with another request 422. A refused action (404, 403, 409, 429) gives the key back. ICP generations (create_icp leaving fields to the AI engine, regenerate_icp) are limited to 20 per account in any hour.',
  request: { body: jsonBody(IcpActionRequest) },
  responses: {
    200: jsonAnswer(
      'list_icps: the account’s ICPs, oldest first; approve/reject/activate/pause/regenerate_icp: the ICP after the action; delete_icp: what was deleted; update_product: the product; list_products: the products, oldest first',
      z.union([IcpResponse, IcpListResponse, IcpDeletedResponse, ProductResponse, ProductListResponse]),
    ),
    201: jsonAnswer(
      'create_icp: the new ICP, workflow_status generating (it becomes generated off the request); create_product: the new product',
      z.union([IcpResponse, ProductResponse]),
    ),
    202: jsonAnswer('A request with this x-idempotency-key is still in progress; repeat it for the outcome', ProcessingResponse),
    403: errorResponse(
      'x-user-id is not connected to the key’s account; the product or ICP belongs to another account; or the plan’s ICP limit is reached (with plan, icp_limit, icp_count)',
      ['forbidden'],
    ),
    404: errorResponse('No such product or ICP', ['not_found']),
    409: errorResponse('The ICP’s state does not allow the action (the message names the state)', ['conflict']),
    422: errorResponse('x-idempotency-key was already used for a different request', ['idempotency_key_reused']),
    429: {
      ...errorResponse(
        'create_icp leaving a field to the AI engine, or regenerate_icp, past the account’s 20 ICP generations in the last hour; nothing changed and the key is given back',
        ['generation_limit'],
      ),
      headers: { 'Retry-After': { description: 'Seconds until the account may start another ICP generation', schema: { type: 'integer' } } },
    },
  },
});

export const apiIcpAction: FunctionDefinition = {
  name: 'api-icp-action',
  mount: 'root',
  method: 'POST',
  policy: policies.idempotentConnectedUser,
  register(app) {
    openapi(app, route, async (c) => {
      const caller = idempotentUserOf(c);
      const answer = await runIcpAction({ ctx: c.get('deps'), input: { caller, request: c.req.valid('json') } });
      // The body is JSON text written to the documented schemas (a replay's as it was stored); Hono
      // cannot relate a status known only at run time to the route's typed responses, hence the cast.
      return c.body(answer.body, answer.status as 200, { 'content-type': 'application/json' }) as never;
    });
  },
};
