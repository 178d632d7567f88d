import { createRoute, z } from '@hono/zod-openapi';
import {
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  partnerCtx,
  policies,
  RotateChildKeyInput,
  RotatedKey,
  rotateChildKey,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const RotateResponse = succeeded(RotatedKey, 'RotateKeyResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Replace a child’s key secret; the old key answers 401 from the moment this commits',
  request: { body: jsonBody(RotateChildKeyInput) },
  responses: {
    200: jsonAnswer('The new key', RotateResponse),
    404: errorResponse('No such child', ['not_found']),
    429: errorResponse('More than 10 rotations of this child in 24 hours (or the API-wide rate limit)', ['rotation_limit'], {
      recent_rotations_24h: z.number().int().optional(),
    }),
  },
});

export const partnerRotateChildKey: FunctionDefinition = {
  name: 'partner-rotate-child-key',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await rotateChildKey({ ctx: partnerCtx(c), input: c.req.valid('json') })) }, 200),
    );
  },
};
