import { createRoute, z } from '@hono/zod-openapi';
import {
  callerKey,
  type FunctionDefinition,
  jsonAnswer,
  ListTrafficRulesInput,
  listTrafficRules,
  openapi,
  policies,
  TrafficRule,
  TrafficRuleScopes,
} from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const TrafficRuleListResponse = succeeded(
  z.object({ rules: z.array(TrafficRule) }).extend(TrafficRuleScopes.shape),
  'TrafficRuleListResponse',
);

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: the traffic rules the key manages (traffic excluded from identification)',
  description:
    'A key that acts on its account lists every rule of the account, account-wide ones first; a key scoped to its own websites lists ' +
    'those websites’ rules. docs/decisions/traffic-rules.md says how each kind matches.',
  request: { query: ListTrafficRulesInput },
  responses: { 200: jsonAnswer('The rules, account-wide first, then by website, kind and value', TrafficRuleListResponse) },
});

export const trafficRules: FunctionDefinition = {
  name: 'traffic-rules',
  mount: 'functions',
  method: 'GET',
  policy: policies.accountKey,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        { success: true as const, ...(await listTrafficRules({ ctx: c.get('deps'), input: { ...c.req.valid('query'), key: callerKey(c) } })) },
        200,
      ),
    );
  },
};
