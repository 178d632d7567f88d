import { createRoute } from '@hono/zod-openapi';
import {
  callerKey,
  errorResponse,
  type FunctionDefinition,
  IdentifyCompanyInput,
  IpLookupResult,
  identifyCompany,
  jsonAnswer,
  openapi,
  policies,
} from '@sightline/core';
import { jsonBody } from '../_shared/schemas.ts';

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Identify the company behind an IP address (5 credits per business match; VPN, hosting and ISP free)',
  request: { body: jsonBody(IdentifyCompanyInput) },
  responses: {
    200: jsonAnswer('The lookup result', IpLookupResult),
    402: errorResponse('Not enough credits for a lookup that needs the paid providers', ['insufficient_credits']),
    503: errorResponse('IP identification is not configured here, or its local data did not load', ['ip_data_unavailable']),
  },
});

export const ipToCompany: FunctionDefinition = {
  name: 'ip-to-company',
  mount: 'functions',
  method: 'POST',
  // The account pays for lookups: a key scoped to its own websites (a released child's) may not spend its credits.
  policy: policies.accountActor,
  meteredAs: 'ip-to-company',
  usesIpData: true,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        await identifyCompany({
          ctx: c.get('deps'),
          input: { ...c.req.valid('json'), accountId: callerKey(c).accountId, apiKeyId: callerKey(c).apiKeyId },
        }),
        200,
      ),
    );
  },
};
