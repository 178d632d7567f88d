import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { createApiServer, errorResponse, type FunctionDefinition, type HonoEnv, openapi, policies } from '@sightline/core';
import { describe, expect, it } from 'vitest';
import { routesOnlyDeps } from '../packages/host/src/openapi-cli.ts';

/**
 * openapi() checks a route's JSON body, query, path parameters and headers in one synchronous step,
 * and documents the route with what its policy and body guard add; a route declaring anything it
 * would not check is refused up front.
 */
const ok = { 200: { description: 'ok' } };

async function serverFor(def: FunctionDefinition) {
  return createApiServer(await routesOnlyDeps(), [def], { functionsPrefix: '/f' });
}

describe('openapi()', () => {
  it('refuses request parts it would not check, and apps createApiServer did not build', () => {
    const bare = new OpenAPIHono<HonoEnv>();
    const plain = createRoute({ method: 'get', path: '/', responses: ok });
    expect(() => openapi(bare, plain, (c) => c.json({}, 200) as never)).toThrow(/createApiServer/);
  });

  it('refuses a body that is not a zod schema, and cookies', async () => {
    const refBody = createRoute({
      method: 'post',
      path: '/',
      request: { body: { content: { 'application/json': { schema: { $ref: '#/components/schemas/X' } } } } },
      responses: ok,
    });
    const withCookies = createRoute({ method: 'get', path: '/', request: { cookies: z.object({ s: z.string() }) }, responses: ok });
    const def = (route: ReturnType<typeof createRoute>, method: 'GET' | 'POST'): FunctionDefinition => ({
      name: 'probe',
      mount: 'functions',
      method,
      policy: policies.publicTracker,
      register(app) {
        openapi(app, route, (c) => c.json({}, 200) as never);
      },
    });
    await expect(serverFor(def(refBody, 'POST'))).rejects.toThrow(/zod schema/);
    await expect(serverFor(def(withCookies, 'GET'))).rejects.toThrow(/cookies/);
  });

  it('checks path parameters and headers, naming the one at fault', async () => {
    const route = createRoute({
      method: 'get',
      path: '/t/{tracking_script_id}',
      request: {
        params: z.object({ tracking_script_id: z.guid('must be a uuid') }),
        headers: z.object({ 'x-trace': z.string().regex(/^\d+$/, 'must be digits').optional() }),
      },
      responses: ok,
    });
    const app = await serverFor({
      name: 'probe',
      mount: 'functions',
      method: 'GET',
      policy: policies.publicTracker,
      register(a) {
        openapi(a, route, (c) => c.json({ id: c.req.valid('param').tracking_script_id, trace: c.req.valid('header')['x-trace'] ?? null }, 200));
      },
    });
    const id = '6f1c1c84-8a1e-4a4e-9d0e-3c1c2f9a7b10';
    const good = await app.request(`http://x/f/probe/t/${id}`, { headers: { 'x-trace': '42' } });
    expect(await good.json()).toEqual({ id, trace: '42' });
    const badParam = await app.request('http://x/f/probe/t/nope');
    expect(badParam.status).toBe(400);
    expect(await badParam.json()).toEqual({ success: false, error: 'tracking_script_id: must be a uuid', code: 'invalid_request' });
    const badHeader = await app.request(`http://x/f/probe/t/${id}`, { headers: { 'x-trace': 'abc' } });
    expect(badHeader.status).toBe(400);
    expect(((await badHeader.json()) as { error: string }).error).toBe('x-trace: must be digits');
  });

  it('puts the policy in front of every path a route answers, not only the function’s root', async () => {
    const route = createRoute({
      method: 'get',
      path: '/t/{id}',
      request: { params: z.object({ id: z.string() }) },
      responses: ok,
    });
    const app = await serverFor({
      name: 'probe',
      mount: 'functions',
      method: 'GET',
      policy: policies.partnerRead,
      register(a) {
        openapi(a, route, (c) => c.json({ reached: true }, 200) as never);
      },
    });
    const res = await app.request('http://x/f/probe/t/abc');
    expect(res.status).toBe(401);
    expect((await app.request('http://x/f/probe/t/abc', { method: 'DELETE' })).status).toBe(405);
    // A path no route answers is not found, not guarded into a 401.
    expect((await app.request('http://x/f/probe/elsewhere')).status).toBe(404);
  });

  it('refuses a path parameter that does not fill its segment (`/t/{id}.js` would name the parameter `id.js`)', async () => {
    const route = createRoute({ method: 'get', path: '/t/{id}.js', request: { params: z.object({ id: z.string() }) }, responses: ok });
    await expect(
      serverFor({
        name: 'probe',
        mount: 'functions',
        method: 'GET',
        policy: policies.publicTracker,
        register(a) {
          openapi(a, route, (c) => c.json({}, 200) as never);
        },
      }),
    ).rejects.toThrow(/whole path segment/);
  });

  it('documents the policy’s errors, the guard’s and the route’s own, the route’s wording winning', async () => {
    const route = createRoute({
      method: 'post',
      path: '/',
      request: { body: { required: true, content: { 'application/json': { schema: z.object({ a: z.string() }) } } } },
      responses: { 200: { description: 'ok' }, 402: errorResponse('route-specific 402', ['insufficient_topup']) },
    });
    const app = await serverFor({
      name: 'probe',
      mount: 'functions',
      method: 'POST',
      policy: policies.partnerAction,
      register(a) {
        openapi(a, route, (c) => c.json({}, 200) as never);
      },
    });
    const doc = app.getOpenAPI31Document({ openapi: '3.1.0', info: { title: 't', version: '1' } });
    const post = doc.paths?.['/f/probe']?.post;
    expect(Object.keys(post?.responses ?? {}).sort()).toEqual(['200', '400', '401', '402', '403', '405', '408', '413', '429', '500', '503']);
    expect(post?.responses?.['402']?.description).toBe('route-specific 402');
    // The route's code and the policy's, for the one status, in the table's order.
    expect(codesOf(doc, '402')).toEqual(['insufficient_ids', 'insufficient_topup']);
    expect(codesOf(doc, '429')).toEqual(['rate_limited']);
    expect(codesOf(doc, '400')).toEqual(['invalid_request']);
    expect(post?.security).toEqual([{ AccessKey: [] }]);
    const headersOf = (status: string) => Object.keys((post?.responses?.[status] as { headers?: object } | undefined)?.headers ?? {}).sort();
    expect(headersOf('429')).toEqual(['RateLimit', 'RateLimit-Policy', 'Retry-After']);
    expect(headersOf('200')).toEqual(['RateLimit', 'RateLimit-Policy']);
    expect(headersOf('402')).toEqual(['RateLimit', 'RateLimit-Policy']);
    // Answered before the limit is counted: no RateLimit headers to promise.
    for (const status of ['401', '403', '405', '413']) expect(headersOf(status), status).toEqual([]);
    expect(headersOf('503')).toEqual(['Retry-After']);
  });

  it('refuses an error response without codes, or with a code answered with another status', async () => {
    const register = (responses: Parameters<typeof createRoute>[0]['responses']) =>
      serverFor({
        name: 'probe',
        mount: 'functions',
        method: 'GET',
        policy: policies.accountKey,
        register(a) {
          openapi(a, createRoute({ method: 'get', path: '/', responses: { ...ok, ...responses } }), (c) => c.json({}, 200) as never);
        },
      });
    await expect(register({ 404: { description: 'no body', content: {} } })).rejects.toThrow(/documents its codes/);
    await expect(register({ 404: errorResponse('wrong status', ['conflict']) })).rejects.toThrow(/conflict is answered with another status/);
    await expect(register({ 404: errorResponse('fine', ['not_found']) })).resolves.toBeDefined();
  });
});

/** The codes the document lists for a status of the probe route (named error bodies resolved). */
function codesOf(doc: { paths?: object; components?: { schemas?: object } }, status: string): string[] {
  type Schema = { $ref?: string; properties?: { code?: { enum?: string[] } } };
  const paths = doc.paths as Record<string, { post?: { responses: Record<string, { content?: Record<string, { schema: Schema }> }> } }>;
  let schema = paths['/f/probe']?.post?.responses[status]?.content?.['application/json']?.schema;
  if (schema?.$ref) schema = ((doc.components?.schemas ?? {}) as Record<string, Schema>)[schema.$ref.split('/').pop() ?? ''];
  return schema?.properties?.code?.enum ?? [];
}
