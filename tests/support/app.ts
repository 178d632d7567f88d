import {
  type BuiltDeps,
  buildDeps,
  connectPostgres,
  createMemoryRateLimiter,
  type Database,
  type DepsChoices,
  type IpDeps,
  type Logger,
  type PaymentProcessor,
  parseEnv,
  type RateLimiter,
  silentLogger,
  type TrackerBudgets,
} from '@sightline/core';
import { createHostApp, nodeHostRuntime } from '@sightline/host';
import { openTestDatabase, type TestDatabase } from './db.ts';
import { checkDocumentedResponse } from './openapi-check.ts';

export const TEST_SECRET = 'test-server-secret-0123456789abcdef-not-for-production';

export interface TestEnvOptions {
  /** Settings as the environment gives them, over the test defaults (e.g. IP_DATA=1 with the free sources' settings). */
  settings?: Record<string, string>;
  allowPrivateWebhooks?: boolean;
  pool?: number;
  rateLimiter?: RateLimiter;
  payments?: PaymentProcessor;
  webhookTimeoutMs?: number;
  /** Builds the waterfall's dependencies over the test database (IP endpoints). */
  ip?: (db: Database) => Promise<IpDeps>;
  /** The auth cache, on as in production unless a test needs every key read from the database. */
  authCache?: boolean;
  /** Where the app logs; silent unless a test reads the log. */
  log?: Logger;
  /** TRUSTED_PROXIES, as CIDRs. */
  trustedProxies?: string[];
  /** Start the tracker worker after each beacon, as production does; off so tests step it by hand. */
  trackerKick?: boolean;
  /** SWEEP_SECRET: the sweep functions answer it (nobody, without one). */
  sweepSecret?: string;
  /** How long usage and lookup reports gather before they are written (1 s, as in production). */
  reportFlushMs?: number;
  /** PUBLIC_BASE_URL: where connect links point (unset: links carry no page URL). */
  publicBaseUrl?: string;
  /** Connect-link completions per client address; generous unless a test is about the limit. */
  connectLinkRateLimiter?: RateLimiter;
  /** collect's budgets; generous unless a test is about them. */
  trackerBudgets?: TrackerBudgets;
}

export interface TestEnv extends TestDatabase {
  deps: BuiltDeps;
  app: ReturnType<typeof createHostApp>;
  /** Waits for background work (auto-reloads) started by requests so far. */
  settle(): Promise<void>;
  /**
   * Waits until the auth-cache notifications of every change committed so far have arrived (the
   * listener's own probe, which clears nothing). For tests that change keys behind the app's
   * back, as another process would.
   */
  authSync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The settings a test runs with, as the environment would give them: Redis when the suite has
 * REDIS_URL, no local IP data unless a test builds it (`ip`), and limits generous enough that
 * suites which are not about them never meet them.
 */
function testSettings(opts: TestEnvOptions): Record<string, string | undefined> {
  return {
    REDIS_URL: process.env.REDIS_URL,
    IP_DATA: '0',
    ALLOW_PRIVATE_WEBHOOKS: String(opts.allowPrivateWebhooks ?? true),
    AUTH_CACHE_TTL_SECONDS: opts.authCache === false ? '0' : '30',
    RATE_LIMIT_PER_MINUTE: '1000000',
    TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE: '1000000',
    TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE: '1000000',
    TRUSTED_PROXIES: opts.trustedProxies?.join(','),
    SWEEP_SECRET: opts.sweepSecret,
    PUBLIC_BASE_URL: opts.publicBaseUrl,
    // No address leaves a test for a resolver or a registry unless the test runs its own.
    RDNS: '0',
    RDAP: '0',
    ...opts.settings,
  };
}

/** What the tests put in place of configuration's choice (core's DepsChoices): only what a test names, and the defaults below. */
function testChoices(opts: TestEnvOptions): DepsChoices {
  const chosen: DepsChoices = {
    // Tests step the tracker worker by hand unless they ask for production's kick.
    trackerKick: opts.trackerKick ?? false,
    // In-process requests carry no client address, so every test's completions would share one count.
    connectLinkRateLimiter: opts.connectLinkRateLimiter ?? createMemoryRateLimiter({ limit: 1_000_000, windowSeconds: 60 }),
    rateLimiter: opts.rateLimiter,
    trackerBudgets: opts.trackerBudgets,
    payments: opts.payments,
    ip: opts.ip,
    webhookTimeoutMs: opts.webhookTimeoutMs,
    reportFlushMs: opts.reportFlushMs,
  };
  return Object.fromEntries(Object.entries(chosen).filter(([, v]) => v !== undefined)) as DepsChoices;
}

/** The test database, which the harness drops itself: the deps' close leaves it open. */
function keptOpen(db: Database): Database {
  return new Proxy(db, { get: (target, name, receiver) => (name === 'close' ? async () => {} : Reflect.get(target, name, receiver)) });
}

/**
 * Dependencies and the full Node host app over a test database, as `npm start` builds them: core's
 * buildDeps over the Node host's runtime (nodeHostRuntime), with the test's settings and choices.
 */
export async function envForDatabase(tdb: TestDatabase, opts: TestEnvOptions = {}): Promise<TestEnv> {
  const env = parseEnv(testSettings(opts));
  const runtime = await nodeHostRuntime(env, { db: keptOpen(tdb.db), secret: TEST_SECRET, log: opts.log ?? silentLogger });
  const deps = await buildDeps(env, runtime, testChoices(opts));
  const app = createHostApp(deps);
  // Every response a test receives from the app is held to the OpenAPI document.
  const request = app.request.bind(app);
  app.request = (async (input: string | Request | URL, init?: RequestInit, ...rest: unknown[]) => {
    const res = await (request as (...a: unknown[]) => Promise<Response>)(input, init, ...rest);
    const url = input instanceof Request ? input.url : String(input);
    // As Hono builds the request: init's method, over the Request's own.
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    await checkDocumentedResponse(url, method, res);
    return res;
  }) as typeof app.request;
  return {
    ...tdb,
    deps,
    app,
    settle: () => deps.runner.drain(),
    authSync: () => deps.syncAuthCache(),
    async close() {
      await deps.close();
      await tdb.drop();
    },
  };
}

/**
 * Another replica of the service over `env`'s database, as a second process runs it: its own deps,
 * transport and app through the same composition, and on Postgres its own connection pool (`pool`
 * connections). Closing it leaves the database to `env`.
 */
export async function replicaEnv(env: TestEnv, opts: TestEnvOptions = {}): Promise<TestEnv> {
  const db = env.url ? connectPostgres({ url: env.url, max: opts.pool ?? 10, prepare: true }) : env.db;
  const drop = async () => {
    if (db !== env.db) await db.close();
  };
  return envForDatabase({ db, url: env.url, drop }, opts);
}

export async function createTestEnv(opts: TestEnvOptions = {}): Promise<TestEnv> {
  return envForDatabase(await openTestDatabase({ pool: opts.pool }), opts);
}

export const fn = (name: string) => `http://localhost/functions/v1/${name}`;

/**
 * The bindings @hono/node-server hands the app for a request whose socket's peer is `address`
 * (what nodeRemoteAddress reads): the third argument of `app.request` for a request from there.
 */
export const socketPeer = (address: string) => ({ incoming: { socket: { remoteAddress: address } } });

export type Json = Record<string, unknown>;

/**
 * In-process request helper: JSON in, `{ status, body, headers }` out. `name` is a function's name
 * (under /functions/v1), or a path from the root for a root function (`/t/tracker.js`).
 */
export async function call(
  env: TestEnv,
  name: string,
  opts: { key?: string; method?: string; body?: unknown; rawBody?: string; query?: Record<string, string>; headers?: Record<string, string> } = {},
) {
  const url = new URL(name.startsWith('/') ? `http://localhost${name}` : fn(name));
  for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers['x-access-key'] = opts.key;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await env.app.request(url.href, { method: opts.method ?? (body ? 'POST' : 'GET'), headers, body });
  const text = await res.text();
  let parsed: Json = {};
  try {
    parsed = JSON.parse(text) as Json;
  } catch {
    parsed = { raw: text };
  }
  return { status: res.status, body: parsed, headers: res.headers };
}
