import { createRoute } from '@hono/zod-openapi';
import {
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  partnerCtx,
  policies,
  UpdateChildInput,
  UpdatedChild,
  updateChild,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const UpdateChildResponse = succeeded(UpdatedChild, 'UpdateChildResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Update any subset of a child’s configuration',
  request: { body: jsonBody(UpdateChildInput) },
  responses: {
    200: jsonAnswer('The updated child', UpdateChildResponse),
    404: errorResponse('No such child key', ['not_found']),
  },
});

export const partnerUpdateChild: FunctionDefinition = {
  name: 'partner-update-child',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await updateChild({ ctx: partnerCtx(c), input: c.req.valid('json') })) }, 200),
    );
  },
};
