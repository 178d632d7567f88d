import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '@sightline/core';
import { allFunctions } from '../functions/index.ts';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { seedDirectAccount, seedDirectKey, seedPartner } from './support/seed.ts';

/**
 * The common route tests: every function the app exposes gets the authentication and HTTP
 * convention cases for free, so a new route cannot ship without them.
 */
let env: TestEnv;
const keys: Record<string, string> = {};

beforeAll(async () => {
  env = await createTestEnv();
  const partner = await seedPartner(env.deps, { quota: 10 });
  keys.partner = partner.key;
  keys.partnerNonMaster = (await seedDirectKey(env.deps, partner.account_id)).key;
  keys.direct = (await seedDirectAccount(env.deps)).key;
  const revoked = await seedPartner(env.deps, { name: 'Revoked partner' });
  await env.db`update api_keys set status = 'revoked' where id = ${revoked.api_key_id}`;
  keys.revoked = revoked.key;
  const suspended = await seedPartner(env.deps, { name: 'Suspended partner' });
  await env.db`update api_keys set status = 'suspended', suspended_reason = 'manual' where id = ${suspended.api_key_id}`;
  keys.suspended = suspended.key;
  const unflagged = await seedPartner(env.deps, { name: 'No longer a partner' });
  await env.db`update accounts set is_partner = false where id = ${unflagged.account_id}`;
  keys.notPartner = unflagged.key;
});
afterAll(() => env.close());

function expectEnvelope(body: Record<string, unknown>) {
  expect(body.success).toBe(false);
  expect(typeof body.error).toBe('string');
  expect((body.error as string).length).toBeGreaterThan(5);
}

const wrongMethod = (m: 'GET' | 'POST') => (m === 'GET' ? 'POST' : 'GET');

describe.each(allFunctions.map((f) => [f.name, f] as const))('%s', (name, def) => {
  const body = def.method === 'POST' ? {} : undefined;
  const send = (key: string | undefined, extra: Parameters<typeof call>[2] = {}) =>
    call(env, name, { key, method: def.method, body, ...extra });

  it('answers 401 without x-access-key', async () => {
    const res = await send(undefined);
    expect(res.status).toBe(401);
    expectEnvelope(res.body);
  });

  it('answers 401 for a malformed key (bad checksum) without looking it up', async () => {
    const good = generateApiKey();
    const bad = `${good.slice(0, -1)}${good.endsWith('A') ? 'B' : 'A'}`;
    const res = await send(bad);
    expect(res.status).toBe(401);
    expectEnvelope(res.body);
  });

  it('answers 401 for a well-formed key that does not exist', async () => {
    const res = await send(generateApiKey());
    expect(res.status).toBe(401);
    expectEnvelope(res.body);
  });

  it('answers 401 for a revoked key', async () => {
    const res = await send(keys.revoked);
    expect(res.status).toBe(401);
    expect(res.body.error).toMatch(/revoked/);
  });

  if (def.auth === 'partner') {
    it('answers 401 for an inactive (suspended) master key', async () => {
      const res = await send(keys.suspended);
      expect(res.status).toBe(401);
      expectEnvelope(res.body);
    });

    it('answers 403 for a partner’s key that is not the designated master', async () => {
      const res = await send(keys.partnerNonMaster);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatch(/master/);
    });

    it('answers 403 for a key of a non-partner account', async () => {
      const res = await send(keys.direct);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatch(/not a partner/);
    });

    it('answers 403 when the account lost its partner flag', async () => {
      const res = await send(keys.notPartner);
      expect(res.status).toBe(403);
      expectEnvelope(res.body);
    });
  }

  it(`answers 405 with Allow for the wrong method, before authentication`, async () => {
    const res = await call(env, name, { method: wrongMethod(def.method) });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toContain(def.method);
    expectEnvelope(res.body);
    for (const m of ['PUT', 'DELETE', 'PATCH']) {
      expect((await call(env, name, { method: m, key: keys.partner })).status).toBe(405);
    }
  });

  if (def.method === 'POST') {
    it('answers 400 for malformed JSON', async () => {
      const res = await send(keys.partner, { rawBody: '{"name":', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/JSON/i);
    });

    it('answers 400 for a body that is not JSON', async () => {
      const res = await send(keys.partner, { rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/application\/json/);
    });

    it('answers 413 for a body over 64 KiB, before authentication', async () => {
      const res = await send(undefined, { rawBody: JSON.stringify({ pad: 'x'.repeat(70_000) }), headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(413);
      expectEnvelope(res.body);
    });

    it('answers 400 for a body that is not UTF-8', async () => {
      const bytes = Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]); // {"a":"\xc3("}
      const res = await env.app.request(`http://localhost/functions/v1/${name}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': keys.partner as string },
        body: bytes,
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(/UTF-8/);
    });

    it('answers 400 for text Postgres cannot store (NUL), naming the field', async () => {
      const res = await send(keys.partner, { rawBody: '{"probe":"a\\u0000b"}', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/^probe: must not contain NUL/);
    });

    it('answers 400 for a JSON body that is not an object', async () => {
      const res = await send(keys.partner, { rawBody: '[1,2]', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expectEnvelope(res.body);
    });
  }

  it('echoes a request id on every answer', async () => {
    const res = await send(undefined, { headers: { 'x-request-id': 'trace-123' } });
    expect(res.headers.get('x-request-id')).toBe('trace-123');
  });
});

describe('unknown paths', () => {
  it('answer 404 in the envelope', async () => {
    for (const path of ['/functions/v1/nope', '/functions/v1/partner-pool-state/extra', '/']) {
      const res = await env.app.request(`http://localhost${path}`);
      expect(res.status).toBe(404);
      expectEnvelope((await res.json()) as Record<string, unknown>);
    }
  });
});
