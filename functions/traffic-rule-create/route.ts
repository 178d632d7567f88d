import { createRoute, z } from '@hono/zod-openapi';
import {
  CreateTrafficRuleInput,
  callerKey,
  createTrafficRule,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
  TrafficRule,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const TrafficRuleResponse = succeeded(
  z.object({ rule: TrafficRule, created: z.boolean().openapi({ description: 'false: the same rule was there already, and is answered' }) }),
  'TrafficRuleResponse',
);

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Addition to the spec: exclude an address range, a company domain, a page path or a country from identification',
  description:
    'Excluded traffic is never identified and never uses an ID; visitor-stats counts it by the rule’s kind. The rule applies from the ' +
    'next beacon the tracker worker takes, on every replica. Adding a rule that exists answers it (200, created false).',
  request: { body: jsonBody(CreateTrafficRuleInput) },
  responses: {
    200: jsonAnswer('The same rule existed: it is answered, nothing changed', TrafficRuleResponse),
    201: jsonAnswer('The rule was added', TrafficRuleResponse),
    403: errorResponse('No website_id (an account-wide rule) from a key scoped to its own websites', ['forbidden']),
    404: errorResponse('No such website for this key', ['not_found']),
    409: errorResponse('The account has the most traffic rules it may have (500)', ['conflict']),
  },
});

export const trafficRuleCreate: FunctionDefinition = {
  name: 'traffic-rule-create',
  mount: 'functions',
  method: 'POST',
  policy: policies.accountKey,
  register(app) {
    openapi(app, route, async (c) => {
      const answer = await createTrafficRule({ ctx: c.get('deps'), input: { ...c.req.valid('json'), key: callerKey(c) } });
      return answer.created ? c.json({ success: true as const, ...answer }, 201) : c.json({ success: true as const, ...answer }, 200);
    });
  },
};
