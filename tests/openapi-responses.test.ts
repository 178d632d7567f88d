import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, fn, type TestEnv } from './support/app.ts';
import { bodiesValidated, checkDocumentedResponse } from './support/openapi-check.ts';

/**
 * The shared check every in-process response passes through (tests/support/app.ts): it has teeth,
 * and the app's requests really go through it.
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
    await expect(checkDocumentedResponse(POOL_STATE, 'GET', json(401, { success: false, error: 'no key' }))).resolves.toBeUndefined();
    await expect(checkDocumentedResponse(POOL_STATE, 'GET', json(401, { success: true, error: 'no key' }))).rejects.toThrow(/does not match/);
    await expect(checkDocumentedResponse(POOL_STATE, 'GET', json(401, { error: 'no key' }))).rejects.toThrow(/does not match/);
    await expect(checkDocumentedResponse(POOL_STATE, 'GET', json(418, { success: false, error: 'teapot' }))).rejects.toThrow(/does not document/);
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
});
