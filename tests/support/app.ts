import {
  type CoreDeps,
  createCoreDeps,
  createKeyring,
  createMemoryRateLimiter,
  createTrackerBudgets,
  type Database,
  type IpDeps,
  type Logger,
  listenAuthCache,
  type PaymentProcessor,
  type RateLimiter,
  silentLogger,
  type TrackerBudgets,
  trustedProxies,
} from '@sightline/core';
import { createHostApp, createNodeWebhookTransport, nodeHmacSha256Hex, nodeRemoteAddress, nodeSha256Base64 } from '@sightline/host';
import { openTestDatabase, type TestDatabase } from './db.ts';
import { checkDocumentedResponse } from './openapi-check.ts';

export const TEST_SECRET = 'test-server-secret-0123456789abcdef-not-for-production';

export interface TestEnvOptions {
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
  deps: CoreDeps & { db: Database };
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

/** Dependencies and the full Node host app over a test database, as `npm start` builds them. */
export async function envForDatabase(tdb: TestDatabase, opts: TestEnvOptions = {}): Promise<TestEnv> {
  const allowPrivate = opts.allowPrivateWebhooks ?? true;
  const webhooks = createNodeWebhookTransport({ allowPrivate });
  const auth = opts.authCache === false ? undefined : await listenAuthCache(tdb.db, { ttlMs: 30_000, maxEntries: 100_000, digest: nodeSha256Base64 });
  const deps = createCoreDeps({
    db: tdb.db,
    keyring: await createKeyring(TEST_SECRET, { hmacSha256Hex: nodeHmacSha256Hex }),
    webhooks,
    log: opts.log ?? silentLogger,
    allowPrivateWebhooks: allowPrivate,
    // Generous by default so suites that are not about the limit never meet it.
    rateLimiter: opts.rateLimiter ?? createMemoryRateLimiter({ limit: 1_000_000, windowSeconds: 60 }),
    payments: opts.payments,
    webhookTimeoutMs: opts.webhookTimeoutMs,
    remoteAddressOf: nodeRemoteAddress,
    trackerKick: opts.trackerKick ?? false,
    // Generous too: suites that send many beacons from one address, or many new visitors to one site, are not about the budgets.
    trackerBudgets:
      opts.trackerBudgets ?? createTrackerBudgets({ beaconsPerAddressPerMinute: 1_000_000, newVisitorBeaconsPerWebsitePerMinute: 1_000_000 }),
    ...(opts.sweepSecret ? { sweepSecret: opts.sweepSecret } : {}),
    ...(opts.reportFlushMs !== undefined ? { reportFlushMs: opts.reportFlushMs } : {}),
    ...(opts.publicBaseUrl ? { publicBaseUrl: opts.publicBaseUrl } : {}),
    // In-process requests carry no client address, so every test's completions share one count.
    connectLinkRateLimiter: opts.connectLinkRateLimiter ?? createMemoryRateLimiter({ limit: 1_000_000, windowSeconds: 60 }),
    ...(opts.trustedProxies ? { trustedProxies: trustedProxies(opts.trustedProxies) } : {}),
    ...(opts.ip ? { ip: await opts.ip(tdb.db) } : {}),
    ...(auth ? { authCache: auth.cache } : {}),
  });
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
    authSync: async () => {
      await auth?.sync();
    },
    async close() {
      await deps.runner.drain();
      await auth?.unlisten();
      await webhooks.close();
      await tdb.drop();
    },
  };
}

export async function createTestEnv(opts: TestEnvOptions = {}): Promise<TestEnv> {
  return envForDatabase(await openTestDatabase({ pool: opts.pool }), opts);
}

export const fn = (name: string) => `http://localhost/functions/v1/${name}`;

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
