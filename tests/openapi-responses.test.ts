import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, fn, type TestEnv } from './support/app.ts';
import { bodiesValidated, checkDocumentedResponse } from './support/openapi-check.ts';
import { startReceiver } from './support/receiver.ts';

/**
 * The shared check every response a test receives passes through — in process (tests/support/app.ts)
 * and fetched from a server on this machine (tests/support/fetch-check.ts): it has teeth, and both
 * paths really go through it.
 */
const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const POOL_STATE = 'http://localhost/functions/v1/partner-pool-state';

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(() => env.close());

describe('responses are held to docs/openapi.json', () => {
  it('passes a documented error, and refuses a body off its schema and a status the route does not document', async () => {
    await expect(
      checkDocumentedResponse(POOL_STATE, 'GET', json(401, { success: false, error: 'no key', code: 'unauthorized' })),
    ).resolves.toBeUndefined();
    // The code is required, and only one the document lists for that status passes.
    await expect(checkDocumentedResponse(POOL_STATE, 'GET', json(401, { success: false, error: 'no key' }))).rejects.toThrow(/does not match/);
    await expect(checkDocumentedResponse(POOL_STATE, 'GET', json(401, { success: false, error: 'no key', code: 'forbidden' }))).rejects.toThrow(
      /does not match/,
    );
    await expect(checkDocumentedResponse(POOL_STATE, 'GET', json(401, { success: true, error: 'no key' }))).rejects.toThrow(/does not match/);
    await expect(checkDocumentedResponse(POOL_STATE, 'GET', json(401, { error: 'no key' }))).rejects.toThrow(/does not match/);
    await expect(checkDocumentedResponse(POOL_STATE, 'GET', json(418, { success: false, error: 'teapot', code: 'invalid_request' }))).rejects.toThrow(
      /does not document/,
    );
    await expect(checkDocumentedResponse(POOL_STATE, 'GET', json(200, { success: true }))).rejects.toThrow(/does not match/);
  });

  it('leaves alone what the document does not describe', async () => {
    await expect(checkDocumentedResponse('http://localhost/nowhere', 'GET', json(404, { anything: 1 }))).resolves.toBeUndefined();
  });

  it('is on the path of every request a test makes to the app', async () => {
    const before = bodiesValidated();
    const res = await env.app.request(fn('partner-pool-state'));
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ success: false });
    expect(bodiesValidated()).toBe(before + 1);
  });

  it('is on the path of every answer a test fetches from a local server, at the Node and at the gateway paths', async () => {
    // A server on 127.0.0.1 that answers a documented route off its schema, as a broken build would.
    const server = await startReceiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: true, pool: 'not a pool' }));
    });
    try {
      const origin = `http://127.0.0.1:${server.port}`;
      await expect(fetch(`${origin}/functions/v1/partner-pool-state`)).rejects.toThrow(/does not match/);
      await expect(fetch(`${origin}/partner-pool-state`)).rejects.toThrow(/does not match/);
      // What the document does not describe (a webhook receiver's path) passes untouched.
      expect((await fetch(`${origin}/hooks`, { method: 'POST', body: '{}' })).status).toBe(200);
      expect(server.received).toHaveLength(3);
    } finally {
      await server.close();
    }
  });
});
