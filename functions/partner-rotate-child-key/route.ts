import { createRoute, z } from '@hono/zod-openapi';
import { partnerCtx, rotateChildKey, openapi, type FunctionDefinition, policies, errorResponse } from '@sightline/core';
import { jsonBody, Timestamp, Uuid } from '../_shared/schemas.ts';

export const RotateBody = z.object({ child_api_key_id: Uuid }).strict().openapi('RotateKeyRequest');

export const RotateResponse = z
  .object({
    success: z.literal(true),
    child_api_key_id: Uuid,
    key: z.string().openapi({ description: 'The new key, shown once' }),
    key_prefix: z.string(),
    old_key_prefix: z.string(),
    rotated_at: Timestamp,
  })
  .openapi('RotateKeyResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Replace a child’s key secret; the old key answers 401 from the moment this commits',
  request: { body: jsonBody(RotateBody) },
  responses: {
    200: { description: 'The new key', content: { 'application/json': { schema: RotateResponse } } },
    404: errorResponse('No such child'),
    429: {
      description: 'More than 10 rotations of this child in 24 hours (or the API-wide rate limit)',
      content: {
        'application/json': {
          schema: z.object({ success: z.literal(false), error: z.string(), recent_rotations_24h: z.number().int().optional() }),
        },
      },
    },
  },
});

export const partnerRotateChildKey: FunctionDefinition = {
  name: 'partner-rotate-child-key',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) => c.json(await rotateChildKey({ ctx: partnerCtx(c), input: c.req.valid('json') }), 200));
  },
};
