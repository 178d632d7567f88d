import {
  type Database,
  ERROR_CODES,
  type FunctionDefinition,
  generateApiKey,
  guardedErrors,
  policies,
  type RateLimiter,
  statusOf,
} from '@sightline/core';
import { createHostApp } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allFunctions } from '../functions/index.ts';
import { call, createTestEnv, fn, socketPeer, type TestEnv } from './support/app.ts';
import { actsAsUser, isPartnerRoute } from './support/routes.ts';
import { seedDirectAccount, seedDirectKey, seedPartner } from './support/seed.ts';
import { seedConnectedUser } from './support/users.ts';

/**
 * The common route tests: every function the app exposes gets the authentication and HTTP
 * convention cases its policy calls for, so a new route cannot ship without them; and every status
 * its policy and body guard document is made to happen, so the document cannot promise what the
 * runtime never answers.
 */
let env: TestEnv;
const keys: Record<string, string> = {};
const SWEEP_SECRET = 'a-sweep-secret-of-at-least-thirty-two-characters';

/** The rate limiter of this suite: generous for everyone but one partner, which it always refuses. */
let refusedKeyId = '';
/** A user connected to the partner's account: what connected-user routes need beside the key. */
let connectedUser = '';
/** Every path the OpenAPI document lists. */
let documentedPaths: string[] = [];
const limiter: RateLimiter = {
  async hit(key) {
    const refused = key === refusedKeyId;
    return { allowed: !refused, limit: 5, remaining: refused ? 0 : 4, resetSeconds: 30, windowSeconds: 60 };
  },
};

beforeAll(async () => {
  env = await createTestEnv({ rateLimiter: limiter });
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
  keys.emptyPool = (await seedPartner(env.deps, { name: 'Empty pool', quota: 0, topup: 0 })).key;
  const limited = await seedPartner(env.deps, { name: 'Rate limited', quota: 10 });
  keys.limited = limited.key;
  connectedUser = (await seedConnectedUser(env.db, partner.account_id)).user_id;
  refusedKeyId = limited.api_key_id;
  documentedPaths = Object.keys(createHostApp(env.deps).getOpenAPI31Document({ openapi: '3.1.0', info: { title: 't', version: '1' } }).paths ?? {});
});
afterAll(() => env.close());

/** The one envelope: `{ success: false, error, code }`, the code one of the table's, answered with its status. */
function expectEnvelope(body: Record<string, unknown>, status?: number) {
  expect(body.success).toBe(false);
  expect(typeof body.error).toBe('string');
  expect((body.error as string).length).toBeGreaterThan(5);
  expect(Object.keys(ERROR_CODES), `code of ${JSON.stringify(body)}`).toContain(body.code);
  if (status !== undefined) expect(statusOf(body.code as keyof typeof ERROR_CODES)).toBe(status);
}

type Doc = ReturnType<ReturnType<typeof createHostApp>['getOpenAPI31Document']>;
/** The codes the document lists for one status of an operation (a named error body resolved). */
function documentedCodesOf(doc: Doc, path: string, method: 'get' | 'post', status: string): string[] {
  type Schema = { $ref?: string; properties?: { code?: { enum?: string[] } } };
  const response = doc.paths?.[path]?.[method]?.responses?.[status] as { content?: Record<string, { schema?: Schema }> } | undefined;
  let schema = response?.content?.['application/json']?.schema;
  if (schema?.$ref) schema = (doc.components?.schemas as Record<string, Schema> | undefined)?.[schema.$ref.split('/').pop() ?? ''];
  return schema?.properties?.code?.enum ?? [];
}

const wrongMethod = (m: 'GET' | 'POST') => (m === 'GET' ? 'POST' : 'GET');
/** The user headers of a connected-user route (a connected user, or `userId`), so its cases get past them to what they test. */
const userHeadersOf = (def: FunctionDefinition, userId = connectedUser): Record<string, string> =>
  actsAsUser(def) ? { 'x-user-id': userId, 'x-idempotency-key': crypto.randomUUID() } : {};
const usesKey = (def: FunctionDefinition) => def.policy.security.some((s) => 'AccessKey' in s);
const readsJson = (def: FunctionDefinition) => (def.body ?? (def.method === 'POST' ? 'json' : 'none')) !== 'none';
/** A function's path in the document: its mount and name, and below it any path parameter its route has (`/t/{file}`). */
function documentedPath(def: FunctionDefinition): string {
  const base = def.mount === 'functions' ? `/functions/v1/${def.name}` : `/${def.name}`;
  return documentedPaths.find((p) => p === base || p.startsWith(`${base}/`)) ?? base;
}
/** The path a test calls a function at: its documented path, each path parameter filled with `fill`. */
const addressOf = (def: FunctionDefinition, fill = 'probe') => documentedPath(def).replace(/\{[^}]+\}/g, encodeURIComponent(fill));

describe.each(allFunctions.map((f) => [f.name, f] as const))('%s', (name, def) => {
  const body = def.method === 'POST' ? {} : undefined;
  const send = (key: string | undefined, extra: Parameters<typeof call>[2] = {}) =>
    call(env, addressOf(def), { key, method: def.method, body, ...extra, headers: { ...userHeadersOf(def), ...extra.headers } });

  if (usesKey(def)) {
    it('answers 401 without x-access-key', async () => {
      const res = await send(undefined);
      expect(res.status).toBe(401);
      expectEnvelope(res.body, 401);
    });

    it('answers 401 for a malformed key (bad checksum) without looking it up', async () => {
      const good = generateApiKey();
      const bad = `${good.slice(0, -1)}${good.endsWith('A') ? 'B' : 'A'}`;
      const res = await send(bad);
      expect(res.status).toBe(401);
      expectEnvelope(res.body, 401);
    });

    it('answers 401 for a well-formed key that does not exist', async () => {
      const res = await send(generateApiKey());
      expect(res.status).toBe(401);
      expectEnvelope(res.body, 401);
    });

    it('answers 401 for a revoked key', async () => {
      const res = await send(keys.revoked);
      expect(res.status).toBe(401);
      expect(res.body.error).toMatch(/revoked/);
    });
  }

  if (isPartnerRoute(def)) {
    it('answers 401 for an inactive (suspended) master key', async () => {
      const res = await send(keys.suspended);
      expect(res.status).toBe(401);
      expectEnvelope(res.body, 401);
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
      expectEnvelope(res.body, 403);
    });
  }

  if (def.policy === policies.sweep) {
    it('answers 401 without the sweep token, or with an API key instead, or a wrong token', async () => {
      const attempts: Record<string, string>[] = [{}, { 'x-access-key': keys.partner as string }, { authorization: 'Bearer not-the-sweep-secret' }];
      for (const headers of attempts) {
        const res = await call(env, name, { method: 'POST', headers });
        expect(res.status).toBe(401);
        expect(res.body.error).toMatch(/sweep token/);
      }
    });
  }

  it(`answers 405 with Allow for the wrong method, before authentication`, async () => {
    const res = await call(env, addressOf(def), { method: wrongMethod(def.method) });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toContain(def.method);
    expectEnvelope(res.body, 405);
    for (const m of ['PUT', 'DELETE', 'PATCH']) {
      expect((await call(env, addressOf(def), { method: m, key: keys.partner })).status).toBe(405);
    }
  });

  if (readsJson(def)) {
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
      expectEnvelope(res.body, 413);
    });

    it('answers 400 for a body that is not UTF-8', async () => {
      const bytes = Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]); // {"a":"\xc3("}
      const res = await env.app.request(`http://localhost${addressOf(def)}`, {
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
      expectEnvelope(res.body, 400);
    });
  }

  it('echoes a request id on every answer', async () => {
    const res = await send(undefined, { headers: { 'x-request-id': 'trace-123' } });
    expect(res.headers.get('x-request-id')).toBe('trace-123');
  });
});

/** What makes each status a policy or body guard documents happen, for one function. */
type Trigger = (def: FunctionDefinition) => Promise<{ status: number; body: Record<string, unknown> }>;

const credentialFor = (def: FunctionDefinition, key: string | undefined): Record<string, string> =>
  usesKey(def) && key ? { 'x-access-key': key } : {};

const triggers: Record<string, Trigger> = {
  // Malformed JSON for a body; a query value or path parameter Postgres cannot store for a route that reads one.
  '400': (def) =>
    readsJson(def)
      ? call(env, addressOf(def), {
          method: def.method,
          rawBody: '{',
          headers: { 'content-type': 'application/json', ...credentialFor(def, keys.partner), ...userHeadersOf(def) },
        })
      : call(env, addressOf(def, '\u0000'), { method: def.method, query: { probe: '\u0000' }, headers: credentialFor(def, keys.partner) }),
  '401': (def) => call(env, addressOf(def), { method: def.method, body: def.method === 'POST' ? {} : undefined }),
  '402': (def) => call(env, addressOf(def), { method: def.method, key: keys.emptyPool, body: def.method === 'POST' ? {} : undefined }),
  // A connected-user route's 403 is a user not connected to the key's account.
  '403': (def) =>
    call(env, addressOf(def), {
      method: def.method,
      key: keys.partnerNonMaster,
      body: def.method === 'POST' ? {} : undefined,
      headers: userHeadersOf(def, crypto.randomUUID()),
    }),
  '405': (def) => call(env, addressOf(def), { method: wrongMethod(def.method) }),
  '408': async (def) => {
    const app = createHostApp(env.deps, { bodyTimeoutMs: 200 });
    const stalled = new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(new TextEncoder().encode('{"a":')) });
    const res = await app.request(`http://localhost${addressOf(def)}`, {
      method: def.method,
      headers: { 'content-type': 'application/json', ...credentialFor(def, keys.partner) },
      body: stalled,
      duplex: 'half',
    } as RequestInit);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  },
  '413': (def) =>
    call(env, addressOf(def), {
      method: def.method,
      rawBody: JSON.stringify({ pad: 'x'.repeat(70_000) }),
      headers: { 'content-type': 'application/json' },
    }),
  '429': (def) => call(env, addressOf(def), { method: def.method, key: keys.limited, body: def.method === 'POST' ? {} : undefined }),
  // An unexpected failure: a statement fails mid-request (after authentication, where there is one).
  '500': (def) => failingDatabase(def, Object.assign(new Error('division by zero'), { code: '22012' })),
  // The database cannot be reached: the server refuses the connection.
  '503': (def) => failingDatabase(def, Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })),
};

/** Calls `def` on an app whose every statement fails with `error`. */
async function failingDatabase(def: FunctionDefinition, error: Error): Promise<{ status: number; body: Record<string, unknown> }> {
  const failing = new Proxy(env.db, {
    apply: () => Promise.reject(error),
  }) as Database;
  // The tracker script reads no database: it fails at the one dependency it does read, the visitor's address.
  const noAddress = () => {
    throw new Error('socket gone');
  };
  const deps = {
    ...env.deps,
    db: failing,
    authCache: undefined,
    sweepSecret: SWEEP_SECRET,
    ...(def.name === 't' || def.name === 'connect' ? { remoteAddressOf: noAddress } : {}),
  };
  const app = createHostApp(deps);
  const headers: Record<string, string> = { ...credentialFor(def, keys.partner) };
  if (def.policy === policies.sweep) headers.authorization = `Bearer ${SWEEP_SECRET}`;
  // A function that reads the database only after validating (no key to look up) needs a valid body.
  const validBodies: Record<string, unknown> = {
    collect: { tracking_script_id: crypto.randomUUID(), type: 'pageview', url: 'https://a.example.com/', session_id: 's' },
    'api-complete-connect-link': { token: `slc_${'a'.repeat(43)}`, name: 'N', linkedin_url: 'https://www.linkedin.com/in/probe' },
  };
  const body = JSON.stringify(validBodies[def.name] ?? {});
  const init: RequestInit = readsJson(def)
    ? { method: def.method, headers: { ...headers, 'content-type': 'application/json' }, body }
    : { method: def.method, headers };
  const res = await app.request(`http://localhost${addressOf(def, 'tracker.js')}`, init, socketPeer('203.0.113.9'));
  if (res.status === 503) expect(res.headers.get('retry-after')).toBe('5');
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('every status a function’s policy and body guard document happens at runtime', () => {
  it.each(allFunctions.map((f) => [f.name, f] as const))('%s', async (_name, def) => {
    const app = createHostApp(env.deps);
    const doc = app.getOpenAPI31Document({ openapi: '3.1.0', info: { title: 't', version: '1' } });
    const op = doc.paths?.[documentedPath(def)]?.[def.method === 'GET' ? 'get' : 'post'];
    const validates = Boolean(op?.requestBody || op?.parameters?.length);
    const statuses = Object.keys(guardedErrors(def, validates));
    // The document lists each of them, and the runtime answers each, in the envelope.
    expect(Object.keys(op?.responses ?? {})).toEqual(expect.arrayContaining(statuses));
    for (const status of statuses) {
      const trigger = triggers[status];
      expect(trigger, `a trigger for ${status}`).toBeDefined();
      const res = await (trigger as Trigger)(def);
      expect(res.status, `${def.name} ${status}: ${JSON.stringify(res.body)}`).toBe(Number(status));
      expectEnvelope(res.body, Number(status));
      // The code is one the document lists for this status of this route, and so are the guards' codes.
      const documented = documentedCodesOf(doc, documentedPath(def), def.method === 'GET' ? 'get' : 'post', status);
      expect(documented, `${def.name} ${status}`).toContain(res.body.code);
      expect(documented, `${def.name} ${status}`).toEqual(expect.arrayContaining(guardedErrors(def, validates)[status]?.codes ?? []));
    }
  });
});

describe('unknown paths', () => {
  it('answer 404 in the envelope', async () => {
    for (const path of ['/functions/v1/nope', '/functions/v1/partner-pool-state/extra', '/']) {
      const res = await env.app.request(`http://localhost${path}`);
      expect(res.status).toBe(404);
      const body = (await res.json()) as Record<string, unknown>;
      expectEnvelope(body, 404);
      expect(body.code).toBe('not_found');
    }
  });
});

describe('the sweep functions', () => {
  it('run with the sweep token and answer what they did', async () => {
    const app = createHostApp({ ...env.deps, sweepSecret: SWEEP_SECRET });
    for (const [name, sweep] of [
      ['sweep-period-rollover', 'period-rollover'],
      ['sweep-webhook-deliveries', 'webhook-deliveries'],
    ]) {
      const res = await app.request(fn(name as string), { method: 'POST', headers: { authorization: `Bearer ${SWEEP_SECRET}` } });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ success: true, sweep, result: expect.any(Object) as unknown });
    }
  });

  it('refuse everyone when no sweep token is configured', async () => {
    const res = await call(env, 'sweep-period-rollover', { method: 'POST', headers: { authorization: 'Bearer ' } });
    expect(res.status).toBe(401);
  });
});
