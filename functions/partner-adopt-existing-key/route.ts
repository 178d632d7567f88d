import { createRoute } from '@hono/zod-openapi';
import {
  AdoptExistingKeyInput,
  AdoptedChild,
  adoptExistingKey,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  partnerCtx,
  policies,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const AdoptResponse = succeeded(AdoptedChild, 'AdoptKeyResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Convert a direct tracker of the partner into a managed child',
  request: { body: jsonBody(AdoptExistingKeyInput) },
  responses: {
    200: jsonAnswer('The adopted child', AdoptResponse),
    404: errorResponse('No such key', ['not_found']),
    409: errorResponse('Already has a parent, not active, no active website, or the authenticating key itself', ['conflict']),
  },
});

export const partnerAdoptExistingKey: FunctionDefinition = {
  name: 'partner-adopt-existing-key',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await adoptExistingKey({ ctx: partnerCtx(c), input: c.req.valid('json') })) }, 200),
    );
  },
};
