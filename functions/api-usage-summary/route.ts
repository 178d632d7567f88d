import { createRoute } from '@hono/zod-openapi';
import { callerKey, type FunctionDefinition, jsonAnswer, openapi, policies, summariseUsage, UsageSummary, UsageSummaryInput } from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const UsageSummaryResponse = succeeded(UsageSummary, 'UsageSummaryResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Credits used, API calls and operations in a calendar period (UTC), with the period’s credit transactions',
  request: { body: jsonBody(UsageSummaryInput) },
  responses: { 200: jsonAnswer('The usage summary', UsageSummaryResponse) },
});

export const apiUsageSummary: FunctionDefinition = {
  name: 'api-usage-summary',
  mount: 'functions',
  method: 'POST',
  policy: policies.connectedUser,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        {
          success: true as const,
          ...(await summariseUsage({ ctx: c.get('deps'), input: { ...c.req.valid('json'), accountId: callerKey(c).accountId } })),
        },
        200,
      ),
    );
  },
};
