import { createRoute } from '@hono/zod-openapi';
import {
  BestFit,
  callerKey,
  errorResponse,
  FindBestFitInput,
  type FunctionDefinition,
  findBestFit,
  jsonAnswer,
  openapi,
  policies,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const IpToBestFitResponse = succeeded(BestFit, 'IpToBestFitResult');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'The waterfall plus deeper enrichment for unresolved IPs (8 credits per lookup; VPN, hosting and ISP free)',
  request: { body: jsonBody(FindBestFitInput) },
  responses: {
    200: jsonAnswer('The best fit', IpToBestFitResponse),
    402: errorResponse('Not enough credits', ['insufficient_credits']),
    503: errorResponse('IP identification is not configured here, or its local data did not load', ['ip_data_unavailable']),
  },
});

export const ipToBestFit: FunctionDefinition = {
  name: 'ip-to-best-fit',
  mount: 'functions',
  method: 'POST',
  // The account pays for lookups: a key scoped to its own websites (a released child's) may not spend its credits.
  policy: policies.accountActor,
  meteredAs: 'ip-to-best-fit',
  usesIpData: true,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        {
          success: true as const,
          ...(await findBestFit({
            ctx: c.get('deps'),
            input: { ...c.req.valid('json'), accountId: callerKey(c).accountId, apiKeyId: callerKey(c).apiKeyId },
          })),
        },
        200,
      ),
    );
  },
};
