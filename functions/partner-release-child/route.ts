import { createRoute } from '@hono/zod-openapi';
import {
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  partnerCtx,
  policies,
  ReleaseChildInput,
  ReleasedChild,
  releaseChild,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const ReleaseResponse = succeeded(ReleasedChild, 'ReleaseChildResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Return a child to the partner’s direct account; its top-up goes back to the pool',
  request: { body: jsonBody(ReleaseChildInput) },
  responses: {
    200: jsonAnswer('Released', ReleaseResponse),
    404: errorResponse('No such child', ['not_found']),
  },
});

export const partnerReleaseChild: FunctionDefinition = {
  name: 'partner-release-child',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await releaseChild({ ctx: partnerCtx(c), input: c.req.valid('json') })) }, 200),
    );
  },
};
