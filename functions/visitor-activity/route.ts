import { createRoute } from '@hono/zod-openapi';
import {
  callerKey,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
  VisitorActivity,
  VisitorActivityInput,
  visitorActivity,
} from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const VisitorActivityResponse = succeeded(VisitorActivity, 'VisitorActivityResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: a visitor’s recent pages and ICP scores (the console’s visitor page)',
  description: 'The visitor is a tracker row of list-visitors: its tracker_site and ip.',
  request: { query: VisitorActivityInput },
  responses: {
    200: jsonAnswer('Its pages and scores', VisitorActivityResponse),
    404: errorResponse('No such identified visitor on a tracker the key can read', ['not_found']),
  },
});

export const visitorActivityFunction: FunctionDefinition = {
  name: 'visitor-activity',
  mount: 'functions',
  method: 'GET',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        { success: true as const, ...(await visitorActivity({ ctx: c.get('deps'), input: { ...c.req.valid('query'), key: callerKey(c) } })) },
        200,
      ),
    );
  },
};
