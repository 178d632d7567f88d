import { createRoute, z } from '@hono/zod-openapi';
import { createApiServer, type FunctionDefinition, openapi, type Policy, policies } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { seedDirectAccount } from './support/seed.ts';
import { seedConnectedUser } from './support/users.ts';

/**
 * The policies the next endpoints stand on (a connected user, a public tracker endpoint, the key that
 * owns a tracker), proved on probe functions before any endpoint uses them: who gets in, what they
 * are refused with, and what the route then knows about its caller.
 */
let env: TestEnv;
let key = '';
let revokedKey = '';
let USER = '';
let otherAccountsUser = '';
const UNKNOWN_USER = '0b6b5d0e-4a59-4f44-9a9e-2f1f6a3c1d77';
const IDEMPOTENCY = '5a0f3c52-2c3e-4d0b-8f1e-9d7c6b5a4e3f';

/** A probe function answering with the caller its policy produced. */
function probe(policy: Policy, body: FunctionDefinition['body'] = 'none', method: 'GET' | 'POST' = 'GET'): FunctionDefinition {
  const route = createRoute({
    method: method === 'GET' ? 'get' : 'post',
    path: '/',
    ...(body !== 'none' ? { request: { body: { required: true, content: { 'application/json': { schema: z.object({ n: z.number() }) } } } } } : {}),
    responses: { 200: { description: 'the caller' } },
  });
  return {
    name: 'probe',
    mount: 'functions',
    method,
    body,
    policy,
    register(app) {
      openapi(app, route, (c) => c.json({ caller: c.get('caller') }, 200) as never);
    },
  };
}

const serve = (def: FunctionDefinition) => createApiServer(env.deps, [def], { functionsPrefix: '/f' });

beforeAll(async () => {
  env = await createTestEnv();
  const account = await seedDirectAccount(env.deps);
  key = account.key;
  USER = (await seedConnectedUser(env.db, account.account_id)).user_id;
  otherAccountsUser = (await seedConnectedUser(env.db, (await seedDirectAccount(env.deps, 'Other')).account_id)).user_id;
  const revoked = await seedDirectAccount(env.deps, 'Revoked');
  await env.db`update api_keys set status = 'revoked' where id = ${revoked.api_key_id}`;
  revokedKey = revoked.key;
});
afterAll(() => env.close());

describe('connected user', () => {
  const app = () => serve(probe(policies.connectedUser));

  it('admits a key with a UUID x-user-id and tells the route who acts', async () => {
    const res = await app().request('http://x/f/probe', { headers: { 'x-access-key': key, 'x-user-id': USER } });
    expect(res.status).toBe(200);
    const { caller } = (await res.json()) as { caller: { kind: string; userId: string; idempotencyKey?: string; key: { apiKeyId: string } } };
    expect(caller).toMatchObject({ kind: 'connected-user', userId: USER });
    expect(caller.idempotencyKey).toBeUndefined();
    expect(caller.key.apiKeyId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('refuses a user who is not connected to the key’s account with a 403 (spec rule 2)', async () => {
    for (const user of [UNKNOWN_USER, otherAccountsUser]) {
      const res = await app().request('http://x/f/probe', { headers: { 'x-access-key': key, 'x-user-id': user } });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: string }).error).toMatch(/not a user connected to this account/);
    }
    await env.db`update connected_users set status = 'disconnected' where id = ${otherAccountsUser}`;
  });

  it('refuses a missing or malformed x-user-id with a 400 naming the header', async () => {
    const missing = await app().request('http://x/f/probe', { headers: { 'x-access-key': key } });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual({ success: false, error: 'the x-user-id header is required', code: 'invalid_request' });
    const bad = await app().request('http://x/f/probe', { headers: { 'x-access-key': key, 'x-user-id': 'me' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/x-user-id header must be a uuid/);
  });

  it('checks the key first: no key or a revoked one is 401 whatever the headers say', async () => {
    expect((await app().request('http://x/f/probe', { headers: { 'x-user-id': USER } })).status).toBe(401);
    expect((await app().request('http://x/f/probe', { headers: { 'x-access-key': revokedKey, 'x-user-id': USER } })).status).toBe(401);
  });

  it('with idempotency, requires a UUID x-idempotency-key and hands it to the route', async () => {
    const idem = serve(probe(policies.idempotentConnectedUser));
    const without = await idem.request('http://x/f/probe', { headers: { 'x-access-key': key, 'x-user-id': USER } });
    expect(without.status).toBe(400);
    expect(((await without.json()) as { error: string }).error).toBe('the x-idempotency-key header is required');
    const res = await idem.request('http://x/f/probe', { headers: { 'x-access-key': key, 'x-user-id': USER, 'x-idempotency-key': IDEMPOTENCY } });
    expect(((await res.json()) as { caller: { idempotencyKey: string } }).caller.idempotencyKey).toBe(IDEMPOTENCY);
  });

  it('documents its headers, security and errors', () => {
    const doc = serve(probe(policies.idempotentConnectedUser)).getOpenAPI31Document({ openapi: '3.1.0', info: { title: 't', version: '1' } });
    const op = doc.paths?.['/f/probe']?.get;
    expect((op?.parameters ?? []).map((p) => ('name' in p ? p.name : '')).sort()).toEqual(['x-idempotency-key', 'x-user-id']);
    expect(op?.security).toEqual([{ AccessKey: [] }]);
    expect(Object.keys(op?.responses ?? {}).sort()).toEqual(['200', '400', '401', '403', '405', '500', '503']);
  });
});

describe('public tracker endpoint', () => {
  const app = () => serve(probe(policies.publicTracker, 'text-json', 'POST'));

  it('needs no key, takes JSON sent as text/plain (a beacon), and answers with CORS headers', async () => {
    const res = await app().request('http://x/f/probe', {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8', origin: 'https://shop.example.com' },
      body: '{"n":1}',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    // In process there is no socket, so no address; collect's tests cover the address.
    expect(await res.json()).toEqual({ caller: { kind: 'visitor', origin: 'https://shop.example.com', ip: null } });
  });

  it('answers a preflight with 204 and the CORS headers, and errors carry them too', async () => {
    const pre = await app().request('http://x/f/probe', {
      method: 'OPTIONS',
      headers: { origin: 'https://a.example', 'access-control-request-method': 'POST' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-methods')).toContain('POST');
    const bad = await app().request('http://x/f/probe', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"n":"x"}' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('access-control-allow-origin')).toBe('*');
    const wrong = await app().request('http://x/f/probe', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'n=1',
    });
    expect(wrong.status).toBe(400);
  });

  it('lists OPTIONS in Allow and documents no credential', async () => {
    const res = await app().request('http://x/f/probe', { method: 'PUT' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST, OPTIONS');
    const doc = app().getOpenAPI31Document({ openapi: '3.1.0', info: { title: 't', version: '1' } });
    const op = doc.paths?.['/f/probe']?.post;
    expect(op?.security).toEqual([]);
    expect(Object.keys((op?.requestBody as { content: object } | undefined)?.content ?? {}).sort()).toEqual(['application/json', 'text/plain']);
  });
});

describe('tracker owner and account key', () => {
  it.each([
    ['trackerOwner', policies.trackerOwner],
    ['accountKey', policies.accountKey],
  ] as const)('%s admits any key of the account that is not revoked', async (_n, policy) => {
    const app = serve(probe(policy));
    const res = await app.request('http://x/f/probe', { headers: { 'x-access-key': key } });
    expect(((await res.json()) as { caller: { kind: string } }).caller.kind).toBe('account-key');
    expect((await app.request('http://x/f/probe', { headers: { 'x-access-key': revokedKey } })).status).toBe(401);
  });
});
