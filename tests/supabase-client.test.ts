import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CreateChildKeyInput, UpdateChildInput } from '@sightline/core';
import { allowedMethodsAt, createNodeServer } from '@sightline/host';
import { createClient, type FunctionInvokeOptions, FunctionRegion, FunctionsHttpError, type WebSocketLikeConstructor } from '@supabase/supabase-js';
import { WebSocket } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allFunctions } from '../functions/index.ts';
import { AdoptResponse } from '../functions/partner-adopt-existing-key/route.ts';
import { CreateChildResponse } from '../functions/partner-create-child-key/route.ts';
import { InstallCheckResponse } from '../functions/partner-install-check/route.ts';
import { ListChildrenResponse } from '../functions/partner-list-children/route.ts';
import { ListEventsResponse } from '../functions/partner-list-events/route.ts';
import { PoolStateResponse } from '../functions/partner-pool-state/route.ts';
import { ReleaseResponse } from '../functions/partner-release-child/route.ts';
import { ReplayResponse } from '../functions/partner-replay-event/route.ts';
import { RotateResponse } from '../functions/partner-rotate-child-key/route.ts';
import { SetBrandResponse } from '../functions/partner-set-brand/route.ts';
import { SetWebhookResponse } from '../functions/partner-set-webhook/route.ts';
import { TransferResponse } from '../functions/partner-transfer-topup/route.ts';
import { UpdateChildResponse } from '../functions/partner-update-child/route.ts';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { type DenoFunctionServer, openPgliteDirEnv, startDenoFunctions } from './support/deno-functions.ts';
import { startReceiver } from './support/receiver.ts';
import { seedDirectKey, seedPartner, uniqueDomain } from './support/seed.ts';
import { type Gateway, startSupabaseGateway } from './support/supabase-gateway.ts';

/**
 * Partner backends on Supabase call us with the official client:
 * `createClient(projectUrl, anonKey).functions.invoke(name, { headers: { 'x-access-key': … } })`.
 * That client builds `<projectUrl>/functions/v1/<name>`, sends objects as JSON, POSTs unless told
 * otherwise, adds `Authorization: Bearer <anon key>` and `apikey`, parses the answer by its
 * Content-Type, and turns any non-2xx into a FunctionsHttpError whose `context` is the Response.
 * This drives every partner endpoint through it over real sockets — the Node host as `npm start`
 * serves it, and a Deno-served Supabase function behind a stand-in for the gateway — and reads
 * every answer back through the route's own response schema.
 */

/** Any string: Sightline authenticates with x-access-key and never looks at the anon key. */
const ANON_KEY = 'sb_publishable_sightline-ignores-this';
/** A well-formed key that does not exist. */
const UNKNOWN_KEY = `sl_${'0'.repeat(38)}`;

/** The spec's error body (Errors section), written out here so the test holds us to it. */
const ErrorEnvelope = z.object({ success: z.literal(false), error: z.string() });

/**
 * createClient builds its Realtime client eagerly and throws on Node 20, which has no global
 * WebSocket; functions never open one. undici's is the WHATWG WebSocket Node 22 makes global, but
 * its typings use node:buffer's Blob where realtime-js's use the DOM's, hence the cast.
 */
const realtimeTransport = WebSocket as unknown as WebSocketLikeConstructor;

function supabaseAt(projectUrl: string, opts: { anonKey?: string; headers?: Record<string, string> } = {}) {
  return createClient(projectUrl, opts.anonKey ?? ANON_KEY, {
    // A server-side client: no session to keep or refresh.
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    realtime: { transport: realtimeTransport },
    global: { headers: opts.headers ?? {} },
  });
}
type Functions = ReturnType<typeof supabaseAt>['functions'];

interface Answer<T> {
  status: number;
  data: T;
}

/** A 2xx through invoke: `data` must already be parsed JSON (the client only parses application/json) matching the route's schema. */
async function invokeOk<S extends z.ZodType>(fns: Functions, name: string, schema: S, options: FunctionInvokeOptions): Promise<Answer<z.infer<S>>> {
  const { data, error, response } = await fns.invoke<unknown>(name, options);
  const failure: unknown = error;
  if (failure) {
    const detail = failure instanceof FunctionsHttpError && response ? `${response.status} ${await response.text()}` : String(failure);
    throw new Error(`${name} failed through supabase-js: ${detail}`);
  }
  if (!response) throw new Error(`${name}: supabase-js returned data without a response`);
  expect(typeof data, `${name} answered ${response.headers.get('content-type')}, which supabase-js does not parse as JSON`).toBe('object');
  return { status: response.status, data: schema.parse(data) };
}

interface Refusal {
  status: number;
  body: z.infer<typeof ErrorEnvelope>;
  allow: string | null;
}

/** A non-2xx through invoke: a FunctionsHttpError whose context is our Response, carrying the `{ success: false, error }` envelope. */
async function invokeRefused(fns: Functions, name: string, options: FunctionInvokeOptions): Promise<Refusal> {
  const { data, error, response } = await fns.invoke<unknown>(name, options);
  const failure: unknown = error;
  expect(data).toBeNull();
  if (!(failure instanceof FunctionsHttpError)) throw new Error(`${name}: expected a FunctionsHttpError, got ${String(failure)}`);
  // invoke hands the same Response back as `response`, typed; `instanceof Response` is no test
  // here, as @hono/node-server replaces the global Response class in this process.
  if (!response) throw new Error(`${name}: supabase-js returned a FunctionsHttpError without a response`);
  expect(failure.context).toBe(response);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = ErrorEnvelope.parse(await response.json());
  expect(body.error.length).toBeGreaterThan(5);
  return { status: response.status, body, allow: response.headers.get('allow') };
}

const keyed = (key: string) => ({ 'x-access-key': key });
// The spec names every partner endpoint partner-*.
const partnerFunctions = allFunctions.filter((f) => f.name.startsWith('partner-'));

describe('supabase-js against the Node host (/functions/v1/<name>)', () => {
  let env: TestEnv | undefined;
  let server: Server | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  let projectUrl = '';
  let partner: Awaited<ReturnType<typeof seedPartner>>;
  let fns: Functions;
  /** What beforeAll started; a test reaching here without it has nothing to call. */
  const started = () => {
    if (!env || !receiver) throw new Error('the host or the webhook receiver did not start (see beforeAll)');
    return { env, hooks: receiver };
  };
  /** Every endpoint that answered 2xx through invoke, for the coverage check at the end. */
  const answered = new Set<string>();
  const ok = async <S extends z.ZodType>(name: string, schema: S, options: FunctionInvokeOptions) => {
    const res = await invokeOk(fns, name, schema, options);
    answered.add(name.split('?', 1)[0] ?? name);
    return res;
  };

  beforeAll(async () => {
    const testEnv = await createTestEnv();
    env = testEnv;
    // The same HTTP server `npm start` puts in front of the app (packages/host/src/main.ts).
    const host = createNodeServer({ fetch: testEnv.app.fetch, log: testEnv.deps.log, allowedMethods: allowedMethodsAt });
    server = host;
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    projectUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
    receiver = await startReceiver();
    partner = await seedPartner(testEnv.deps, { quota: 1000, topup: 100 });
    fns = supabaseAt(projectUrl).functions;
  });
  afterAll(async () => {
    // Guarded: a beforeAll that failed halfway must not hide its error behind this one's.
    server?.closeAllConnections();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    await receiver?.close();
    await env?.close();
  });

  describe('every partner endpoint answers the official client', () => {
    const master = () => keyed(partner.key);
    let child: z.infer<typeof CreateChildResponse>['child'];
    let createdEventId = '';

    it('partner-pool-state: a GET with no body, answered as parsed JSON', async () => {
      const res = await ok('partner-pool-state', PoolStateResponse, { method: 'GET', headers: master() });
      expect(res.status).toBe(200);
      expect(res.data.pool).toMatchObject({ monthly_id_quota: 1000, topup_balance: 100, available: 1100 });
    });

    it('partner-set-webhook: an object body goes out as application/json and a secret is minted and returned', async () => {
      const res = await ok('partner-set-webhook', SetWebhookResponse, { headers: master(), body: { url: started().hooks.url } });
      expect(res.data).toMatchObject({ partner_webhook_url: started().hooks.url, secret_unchanged: false });
      expect(res.data.partner_webhook_secret?.length).toBeGreaterThanOrEqual(8);
    });

    it('partner-create-child-key: 201 with the new child’s key', async () => {
      const body = { name: 'Invoked Ltd', domain: uniqueDomain('invoked'), monthly_id_quota: 50 } satisfies CreateChildKeyInput;
      const res = await ok('partner-create-child-key', CreateChildResponse, { headers: master(), body });
      expect(res.status).toBe(201);
      child = res.data.child;
      expect(child.key).toMatch(/^sl_/);
      expect(child.key.startsWith(child.key_prefix)).toBe(true);
      expect(res.data.website.domain).toBe(body.domain);
      expect(res.data.subscription.monthly_id_quota).toBe(50);
    });

    it('partner-list-children: query parameters ride in the function name', async () => {
      const res = await ok(`partner-list-children?child_api_key_id=${child.api_key_id}`, ListChildrenResponse, { method: 'GET', headers: master() });
      expect(res.data.children).toHaveLength(1);
      expect(res.data.children[0]).toMatchObject({ child_api_key_id: child.api_key_id, name: 'Invoked Ltd', monthly_id_quota: 50 });
    });

    it('partner-update-child: a quota increase applies at once', async () => {
      const body = { child_api_key_id: child.api_key_id, name: 'Renamed Ltd', monthly_id_quota: 80 } satisfies UpdateChildInput;
      const res = await ok('partner-update-child', UpdateChildResponse, { headers: master(), body });
      expect(res.data.child).toMatchObject({ id: child.api_key_id, name: 'Renamed Ltd', parent_api_key_id: partner.api_key_id });
      expect(res.data.subscription.monthly_id_quota).toBe(80);
    });

    it('partner-transfer-topup: both balances move', async () => {
      const res = await ok('partner-transfer-topup', TransferResponse, {
        headers: master(),
        body: { child_api_key_id: child.api_key_id, amount: 7 },
      });
      expect(res.data).toMatchObject({ partner_topup_balance: 93, child_topup_balance: 7, transferred: 7 });
    });

    it('partner-install-check: a new child’s tracker has sent no page view yet', async () => {
      const res = await ok(`partner-install-check?child_api_key_id=${child.api_key_id}`, InstallCheckResponse, { method: 'GET', headers: master() });
      expect(res.data).toMatchObject({ installed: false, last_page_view_at: null });
    });

    it('partner-set-brand: the console’s white label, answered as stored', async () => {
      const brand = { brand_name: 'Invoked Agency', accent_color: '#336699', logo_url: 'https://agency.example.com/logo.png' };
      const res = await ok('partner-set-brand', SetBrandResponse, { headers: master(), body: brand });
      expect(res.data).toMatchObject({ brand });
    });

    it('partner-rotate-child-key: a new key is returned and the old one is refused with 401 at once', async () => {
      // A child key is a valid key but not a master: 403 until it is rotated away, then unknown.
      expect((await invokeRefused(fns, 'partner-pool-state', { method: 'GET', headers: keyed(child.key) })).status).toBe(403);
      const res = await ok('partner-rotate-child-key', RotateResponse, { headers: master(), body: { child_api_key_id: child.api_key_id } });
      expect(res.data.child_api_key_id).toBe(child.api_key_id);
      expect(res.data.key).toMatch(/^sl_/);
      expect(res.data.key).not.toBe(child.key);
      expect(res.data.old_key_prefix).toBe(child.key_prefix);
      expect((await invokeRefused(fns, 'partner-pool-state', { method: 'GET', headers: keyed(child.key) })).status).toBe(401);
    });

    it('partner-adopt-existing-key: the partner’s own direct key becomes a child, unrotated', async () => {
      const own = await seedDirectKey(started().env.deps, partner.account_id);
      const res = await ok('partner-adopt-existing-key', AdoptResponse, {
        headers: master(),
        body: { api_key_id: own.api_key_id, name: 'Adopted Ltd' },
      });
      expect(res.data.child).toMatchObject({ api_key_id: own.api_key_id, name: 'Adopted Ltd', status: 'active' });
      expect(res.data.website).toMatchObject({ id: own.website_id, tracking_script_id: own.tracking_script_id });
      expect(res.data.webhook).toBeNull();
    });

    it('partner-release-child: the child’s top-up returns to the pool', async () => {
      const res = await ok('partner-release-child', ReleaseResponse, { headers: master(), body: { child_api_key_id: child.api_key_id } });
      expect(res.data).toEqual({ success: true, released_api_key_id: child.api_key_id, topup_returned: 7 });
      const pool = await ok('partner-pool-state', PoolStateResponse, { method: 'GET', headers: master() });
      expect(pool.data.pool.topup_balance).toBe(100);
    });

    it('partner-list-events: the child’s events, delivered to the partner webhook', async () => {
      await started().env.settle();
      const res = await ok(`partner-list-events?child_api_key_id=${child.api_key_id}&limit=50`, ListEventsResponse, {
        method: 'GET',
        headers: master(),
      });
      const names = res.data.events.map((e) => e.event);
      expect(names).toEqual(expect.arrayContaining(['child.created', 'child.updated', 'child.topup_changed', 'child.released']));
      const created = res.data.events.find((e) => e.event === 'child.created');
      expect(created).toMatchObject({ delivery_status: 'delivered', child_api_key_id: child.api_key_id });
      createdEventId = created?.id ?? '';
    });

    it('partner-replay-event: the event is delivered again', async () => {
      const res = await ok('partner-replay-event', ReplayResponse, { headers: master(), body: { event_id: createdEventId } });
      expect(res.data).toEqual({ success: true, event_id: createdEventId, delivery_status: 'pending' });
      await started().env.settle();
      const deliveries = started().hooks.received.filter((r) => r.method === 'POST' && r.headers['x-service-event'] === 'child.created');
      expect(deliveries).toHaveLength(2);
      expect(deliveries[1]?.body).toBe(deliveries[0]?.body);
    });

    it('a client pinned to a region still reaches GET endpoints (its forceFunctionRegion parameter is ignored)', async () => {
      const res = await ok('partner-list-children?include_inactive=true', ListChildrenResponse, {
        method: 'GET',
        headers: master(),
        region: FunctionRegion.EuWest1,
      });
      expect(res.data.children.map((c) => c.name)).toContain('Adopted Ltd');
    });

    it('the x-access-key can be set once, as a global header of the client', async () => {
      const global = supabaseAt(projectUrl, { headers: master() }).functions;
      const res = await invokeOk(global, 'partner-pool-state', PoolStateResponse, { method: 'GET' });
      expect(res.data.pool.monthly_id_quota).toBe(1000);
    });

    it('covered every partner endpoint the host serves', () => {
      expect([...answered].sort()).toEqual(partnerFunctions.map((f) => f.name).sort());
    });
  });

  describe('errors come back as FunctionsHttpError with our envelope in context', () => {
    it.each(partnerFunctions.map((f) => [f.name, f.method] as const))('%s: an unknown key is a 401', async (name, method) => {
      const res = await invokeRefused(fns, name, { method, headers: keyed(UNKNOWN_KEY), ...(method === 'POST' ? { body: {} } : {}) });
      expect(res.status).toBe(401);
      expect(res.body.success).toBe(false);
    });

    it('the anon key is not a credential: the master key in its place, without x-access-key, is a 401', async () => {
      const res = await invokeRefused(supabaseAt(projectUrl, { anonKey: partner.key }).functions, 'partner-pool-state', { method: 'GET' });
      expect(res.status).toBe(401);
    });

    it('an invalid field is a 400 naming it', async () => {
      const res = await invokeRefused(fns, 'partner-create-child-key', {
        headers: keyed(partner.key),
        body: { name: 'Bad', domain: 'https://not-bare.example/path' },
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/domain/);
    });

    it('a pre-serialised string body goes out as text/plain and is a 400 asking for JSON', async () => {
      const res = await invokeRefused(fns, 'partner-create-child-key', {
        headers: keyed(partner.key),
        body: JSON.stringify({ name: 'Stringified', domain: uniqueDomain('stringified') }),
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/Content-Type: application\/json/);
    });

    it('invoke’s default POST on a GET endpoint is a 405 with Allow', async () => {
      const res = await invokeRefused(fns, 'partner-pool-state', { headers: keyed(partner.key) });
      expect(res).toMatchObject({ status: 405, allow: 'GET, HEAD' });
    });

    it('another method on a POST endpoint is a 405 with Allow', async () => {
      const res = await invokeRefused(fns, 'partner-rotate-child-key', { method: 'DELETE', headers: keyed(partner.key) });
      expect(res).toMatchObject({ status: 405, allow: 'POST' });
    });
  });
});

/**
 * Deployed on Supabase, a function is mounted at `/<name>` and the gateway maps
 * `<project>/functions/v1/<name>` onto it; supabase-js only knows the latter. A small stand-in
 * for the gateway (tests/support/supabase-gateway.ts) sits in front of the Deno server.
 */
describe(`supabase-js against a Deno-served function behind the gateway (${usingPostgres ? 'Postgres' : 'embedded PGlite'})`, () => {
  let env: TestEnv | undefined;
  let dataDir: string | undefined;
  let deno: DenoFunctionServer | undefined;
  let gateway: Gateway | undefined;
  let key = '';

  const functions = () => {
    if (!gateway) throw new Error('the Deno server or the gateway did not start (see beforeAll)');
    return supabaseAt(gateway.url).functions;
  };

  beforeAll(async () => {
    if (usingPostgres) {
      env = await createTestEnv();
      key = (await seedPartner(env.deps, { quota: 30, topup: 4 })).key;
      if (!env.url) throw new Error('createTestEnv returned no URL for a Postgres database');
      deno = await startDenoFunctions({ DATABASE_URL: env.url }, { IP_DATA: '0' });
    } else {
      dataDir = await mkdtemp(join(tmpdir(), 'sightline-supabase-client-'));
      const seeding = await openPgliteDirEnv(dataDir);
      key = (await seedPartner(seeding.deps, { quota: 30, topup: 4 })).key;
      // PGlite admits one process: Node lets go of the directory before Deno opens it.
      await seeding.close();
      deno = await startDenoFunctions({ PGLITE_DIR: dataDir }, { IP_DATA: '0' });
    }
    gateway = await startSupabaseGateway(deno.origin);
  }, 90_000);

  afterAll(async () => {
    try {
      await gateway?.close();
      await deno?.stop();
    } finally {
      await env?.close();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('partner-pool-state: GET through invoke reaches the function at /<name>', async () => {
    const res = await invokeOk(functions(), 'partner-pool-state', PoolStateResponse, { method: 'GET', headers: keyed(key) });
    expect(res.status).toBe(200);
    expect(res.data.pool).toMatchObject({ monthly_id_quota: 30, topup_balance: 4, available: 34 });
    expect(gateway?.forwarded).toContain('/partner-pool-state');
  });

  it('partner-create-child-key: a JSON body read from Deno’s request stream, 201', async () => {
    const body = { name: 'Deno Invoked', domain: uniqueDomain('deno-invoked'), monthly_id_quota: 3 } satisfies CreateChildKeyInput;
    const res = await invokeOk(functions(), 'partner-create-child-key', CreateChildResponse, { headers: keyed(key), body });
    expect(res.status).toBe(201);
    expect(res.data.child).toMatchObject({ name: 'Deno Invoked', status: 'active' });
    expect(res.data.child.key).toMatch(/^sl_/);
    expect(res.data.website.domain).toBe(body.domain);
  });

  it('errors are FunctionsHttpError with the envelope: 401 unknown key, 400 bad field, 405 wrong method', async () => {
    const unknown = await invokeRefused(functions(), 'partner-pool-state', { method: 'GET', headers: keyed(UNKNOWN_KEY) });
    expect(unknown.status).toBe(401);
    const invalid = await invokeRefused(functions(), 'partner-create-child-key', {
      headers: keyed(key),
      body: { name: 'Bad', domain: 'not a domain' },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatch(/domain/);
    const wrongMethod = await invokeRefused(functions(), 'partner-pool-state', { headers: keyed(key) });
    expect(wrongMethod).toMatchObject({ status: 405, allow: 'GET, HEAD' });
  });
});
