import { createRoute } from '@hono/zod-openapi';
import {
  callerKey,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  MarkVisitorInput,
  markVisitor,
  openapi,
  policies,
  VisitorMarks,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const VisitorMarksResponse = succeeded(VisitorMarks, 'VisitorMarksResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Addition to the spec: watch or pin a visitor list-visitors shows the key',
  description:
    'The visitor is a tracker row of list-visitors: its tracker_site and ip. A mark omitted keeps its value. list-visitors and visitors-export filter on the marks (`watched`, `pinned`). A suspended key may still mark.',
  request: { body: jsonBody(MarkVisitorInput) },
  responses: {
    200: jsonAnswer('The visitor’s marks after the change', VisitorMarksResponse),
    404: errorResponse('No such identified visitor on a tracker the key can read (api rows have no visitor to mark)', ['not_found']),
  },
});

export const visitorMark: FunctionDefinition = {
  name: 'visitor-mark',
  mount: 'functions',
  method: 'POST',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await markVisitor({ ctx: c.get('deps'), input: { ...c.req.valid('json'), key: callerKey(c) } })) }, 200),
    );
  },
};
