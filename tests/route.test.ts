import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { describe, expect, it } from 'vitest';
import { openapi, type HonoEnv } from '@sightline/core';

/** openapi() checks a route's JSON body and query; a route declaring anything else is refused up front. */
describe('openapi()', () => {
  const ok = { 200: { description: 'ok' } };
  it('refuses request parts it would not check', () => {
    const app = new OpenAPIHono<HonoEnv>();
    const withParams = createRoute({ method: 'get', path: '/{id}', request: { params: z.object({ id: z.string() }) }, responses: ok });
    expect(() => openapi(app, withParams, (c) => c.json({}, 200) as never)).toThrow(/params/);
    const refBody = createRoute({
      method: 'post',
      path: '/',
      request: { body: { content: { 'application/json': { schema: { $ref: '#/components/schemas/X' } } } } },
      responses: ok,
    });
    expect(() => openapi(app, refBody, (c) => c.json({}, 200) as never)).toThrow(/zod schema/);
  });
});
