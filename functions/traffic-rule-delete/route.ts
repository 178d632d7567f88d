import { createRoute, z } from '@hono/zod-openapi';
import {
  callerKey,
  DeleteTrafficRuleInput,
  deleteTrafficRule,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
  TrafficRule,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const TrafficRuleDeletedResponse = succeeded(z.object({ rule: TrafficRule }), 'TrafficRuleDeletedResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Addition to the spec: remove a traffic rule; the next beacon is judged without it',
  request: { body: jsonBody(DeleteTrafficRuleInput) },
  responses: {
    200: jsonAnswer('The rule that was removed', TrafficRuleDeletedResponse),
    403: errorResponse('An account-wide rule, and a key scoped to its own websites', ['forbidden']),
    404: errorResponse('No such traffic rule for this key', ['not_found']),
  },
});

export const trafficRuleDelete: FunctionDefinition = {
  name: 'traffic-rule-delete',
  mount: 'functions',
  method: 'POST',
  policy: policies.accountKey,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        { success: true as const, ...(await deleteTrafficRule({ ctx: c.get('deps'), input: { ...c.req.valid('json'), key: callerKey(c) } })) },
        200,
      ),
    );
  },
};
