import { createRoute, z } from '@hono/zod-openapi';
import { partnerCtx, releaseChild, openapi, type FunctionDefinition, policies, errorResponse } from '@sightline/core';
import { jsonBody, Uuid } from '../_shared/schemas.ts';

export const ReleaseBody = z.object({ child_api_key_id: Uuid }).strict().openapi('ReleaseChildRequest');

export const ReleaseResponse = z
  .object({ success: z.literal(true), released_api_key_id: Uuid, topup_returned: z.number().int() })
  .openapi('ReleaseChildResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Return a child to the partner’s direct account; its top-up goes back to the pool',
  request: { body: jsonBody(ReleaseBody) },
  responses: {
    200: { description: 'Released', content: { 'application/json': { schema: ReleaseResponse } } },
    404: errorResponse('No such child'),
  },
});

export const partnerReleaseChild: FunctionDefinition = {
  name: 'partner-release-child',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) => c.json(await releaseChild({ ctx: partnerCtx(c), input: c.req.valid('json') }), 200));
  },
};
