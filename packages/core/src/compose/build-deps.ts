import type { Redis } from 'ioredis';
import { CONNECT_LINK_COMPLETIONS } from '../account/complete-connect-link.ts';
import { builtinEngine } from '../ai/builtin-engine.ts';
import type { AiEngine } from '../ai/engine.ts';
import { createOpenAiCompatibleEngine } from '../ai/openai-compatible.ts';
import { listenAuthCache } from '../auth/auth-cache.ts';
import { connectPostgres } from '../drivers/db-postgres.ts';
import { connectRedis, rateLimiterFor } from '../drivers/redis.ts';
import type { BackgroundRunner } from '../kernel/background.ts';
import type { CoreDeps, Logger, RequestHeaders } from '../kernel/context.ts';
import { createKeyring, type HmacSha256Hex } from '../kernel/crypto.ts';
import { createRedisRateLimiter, createTrackerBudgets, type RateLimiter, type TrackerBudgets } from '../kernel/limits.ts';
import { trustedProxies } from '../kernel/net/client-address.ts';
import type { WebhookTransport } from '../kernel/net/webhook-destination.ts';
import type { Database } from '../kernel/sql.ts';
import { retentionSettings } from '../lifecycle/settings.ts';
import { builtinProcessor, type PaymentProcessor } from '../payments/processor.ts';
import { createStripeProcessor } from '../payments/stripe.ts';
import { createPeopleDataLabsResearch } from '../research/people-data-labs.ts';
import type { ProfileResearch } from '../research/profile.ts';
import { urlOnlyResearch } from '../research/url-only.ts';
import type { Env } from './config.ts';
import { type CoreDepsParts, createCoreDeps } from './deps.ts';
import { type FreeSourceHost, type IpDataSources, ipDepsFor } from './ip-deps.ts';

/**
 * What only the runtime can supply; everything else is decided here, from configuration, the same
 * way on every host (the Node host and the Supabase entry used to decide payments, Redis and the
 * database each on their own, and had drifted).
 */
export interface HostRuntime {
  /** The opened database, its schema current (hosts differ: PGlite or Postgres, migrated or not). */
  db: Database;
  /** The server secret the keyring derives from (at least 32 characters). */
  secret: string;
  log: Logger;
  /** Outbound webhooks with the runtime's connect-time address guard. */
  webhooks: WebhookTransport & { close?(): Promise<void> };
  /** A synchronous HMAC where the runtime has one (Node), cheaper per request than WebCrypto. */
  hmacSha256Hex?: HmacSha256Hex;
  /** The ioredis client class, when REDIS_URL is set (a host loads it only then). */
  redisClient?: typeof Redis;
  /**
   * Whether this process may hold a listening connection: a long-lived server may (the auth cache
   * and the local IP data follow database notifications); a short-lived isolate should not.
   */
  listens: boolean;
  /** The auth cache's index digest (SHA-256 of a key), where the process keeps one. */
  digest?: (key: string) => string;
  /** Where the local IP data comes from; without it IP lookups answer 503. */
  ipSources?: IpDataSources;
  /** The runtime's DNS resolver for the reverse-DNS source; absent, that source is off. */
  dnsResolver?: FreeSourceHost['dnsResolver'];
  /** `IP_DATABASES`, opened by the host (which owns files) before it composes. */
  operatorDatabases?: NonNullable<FreeSourceHost['databases']> & { close?(): void };
  /**
   * What a failure to load the IP data means. Without this, the process fails to start (a broken
   * install); with it, the error is reported here and IP lookups answer 503 (an Edge Function
   * deployed without its data still serves everything else).
   */
  onIpDataError?: (err: unknown) => void;
  /**
   * Load the IP data after returning, so the process answers at once; IP lookups wait for it
   * (`ipLoading`). For a long-lived server; an isolate serving one function waits instead.
   */
  loadIpInBackground?: boolean;
  /** Hands background promises to the runtime (Supabase: EdgeRuntime.waitUntil). */
  handOff?: (p: Promise<unknown>) => void;
  /** The request's socket peer, from the runtime's request bindings. */
  remoteAddressOf?: (env: unknown) => string | undefined;
  /** The request's headers by lower-case name, from the runtime's request bindings. */
  headersOf?: (env: unknown) => RequestHeaders | undefined;
}

/**
 * What a caller puts in place of configuration's choice. Production passes none, so every one
 * follows configuration. The test harness (tests/support/app.ts) runs the same composition and
 * swaps only these: fakes of the ports we do not own (payments, the AI engine, profile research, the
 * IP providers inside `ip`), limits a test is about (or generous ones for tests that are not), and
 * its own timing (the receiver timeout, the write-behind delay, the tracker worker stepped by hand).
 */
export interface DepsChoices {
  rateLimiter?: RateLimiter;
  connectLinkRateLimiter?: RateLimiter;
  trackerBudgets?: TrackerBudgets;
  payments?: PaymentProcessor;
  ai?: AiEngine;
  research?: ProfileResearch;
  /** The waterfall's dependencies over the opened database, in place of the configured ones (IP_DATA, the providers' keys). */
  ip?: (db: Database) => Promise<ChosenIp>;
  webhookTimeoutMs?: number;
  trackerKick?: boolean;
  reportFlushMs?: number;
}

/** The waterfall's dependencies, and the store to close with the rest where they hold one. */
type ChosenIp = NonNullable<CoreDepsParts['ip']> & { store?: { close(): Promise<void> } };

export type BuiltDeps = CoreDeps & {
  db: Database;
  runner: BackgroundRunner;
  /**
   * Resolves once the auth cache has heard the notifications of every change committed so far (its
   * listener's own probe, which clears nothing); at once where the process keeps no auth cache.
   */
  syncAuthCache(): Promise<void>;
  close(): Promise<void>;
};

/** Postgres at `url`, with the configured pool size and prepared-statement setting. */
export function connectConfiguredPostgres(env: Env, url: string): Database {
  return connectPostgres({ url, max: env.DATABASE_POOL_MAX, prepare: env.DATABASE_PREPARE });
}

export function paymentProcessorFor(env: Env): PaymentProcessor {
  if (env.PAYMENTS_PROVIDER === 'stripe' && env.STRIPE_SECRET_KEY) return createStripeProcessor(env.STRIPE_SECRET_KEY);
  return builtinProcessor;
}

/** The configured LLM (LLM_BASE_URL with LLM_MODEL), else the built-in rules engine. */
export function aiEngineFor(env: Env, log?: Logger): AiEngine {
  if (!env.LLM_BASE_URL || !env.LLM_MODEL) return builtinEngine;
  return createOpenAiCompatibleEngine({
    baseUrl: env.LLM_BASE_URL,
    model: env.LLM_MODEL,
    apiKey: env.LLM_API_KEY,
    apiStyle: env.LLM_API_STYLE,
    azureApiVersion: env.LLM_AZURE_API_VERSION,
    timeoutMs: env.LLM_TIMEOUT_MS,
    maxRetries: env.LLM_MAX_RETRIES,
    log,
  });
}

/** People Data Labs when RESEARCH_PROVIDER says so (configuration guarantees its key), else url-only. */
export function profileResearchFor(env: Env): ProfileResearch {
  if (env.RESEARCH_PROVIDER === 'people-data-labs' && env.PDL_API_KEY) return createPeopleDataLabsResearch({ apiKey: env.PDL_API_KEY });
  return urlOnlyResearch;
}

/**
 * Every dependency of the core from validated configuration and what the runtime supplies: the
 * keyring, payments, Redis (with its outage handling) and the rate limiter, the auth cache where
 * the process listens, the waterfall's data and providers, the sweep token. `close` releases them
 * in order, after background work has drained.
 */
export async function buildDeps(env: Env, runtime: HostRuntime, choices: DepsChoices = {}): Promise<BuiltDeps> {
  const { db, log } = runtime;
  const keyring = await createKeyring(runtime.secret, runtime.hmacSha256Hex ? { hmacSha256Hex: runtime.hmacSha256Hex } : {});
  const redis = env.REDIS_URL && runtime.redisClient ? connectRedis(runtime.redisClient, env.REDIS_URL, log) : undefined;
  const auth =
    runtime.listens && runtime.digest && env.AUTH_CACHE_TTL_SECONDS > 0
      ? await listenAuthCache(db, { ttlMs: env.AUTH_CACHE_TTL_SECONDS * 1000, maxEntries: env.AUTH_CACHE_MAX_KEYS, digest: runtime.digest, log })
      : undefined;
  const { ip: chosenIp, ...chosen } = choices;
  let ip: ChosenIp | undefined;
  let ipLoading: Promise<Awaited<ReturnType<typeof ipDepsFor>> | undefined> | undefined;
  if (chosenIp) ip = await chosenIp(db);
  else if (env.IP_DATA && runtime.ipSources) {
    const sources = runtime.ipSources;
    const free: FreeSourceHost = {
      ...(runtime.dnsResolver ? { dnsResolver: runtime.dnsResolver } : {}),
      ...(runtime.operatorDatabases ? { databases: runtime.operatorDatabases } : {}),
      // The RDAP cache fills behind lookups, paced by each registry's budget: a queue can take
      // minutes, and a fill lost at shutdown costs one query later, so fills are not after-work the
      // process drains before it exits.
      background: (name, task) => {
        void task().catch((err: unknown) =>
          log.warn('background task failed', { task: name, error: err instanceof Error ? err.message : String(err) }),
        );
      },
    };
    const load = ipDepsFor(env, db, log, redis, sources, { follow: runtime.listens }, free).then(
      (loaded) => (ip = loaded),
      (err: unknown) => {
        if (!runtime.onIpDataError) throw err;
        runtime.onIpDataError(err);
        return undefined;
      },
    );
    if (runtime.loadIpInBackground) ipLoading = load;
    else await load;
  }
  const configured: CoreDepsParts & { db: Database } = {
    db,
    keyring,
    webhooks: runtime.webhooks,
    log,
    allowPrivateWebhooks: env.ALLOW_PRIVATE_WEBHOOKS,
    // Without Redis each process counts alone; set REDIS_URL for one limit across the fleet.
    rateLimiter: rateLimiterFor(env, redis),
    payments: paymentProcessorFor(env),
    ai: aiEngineFor(env, log),
    research: profileResearchFor(env),
    ...(runtime.handOff ? { handOff: runtime.handOff } : {}),
    ...(ip ? { ip } : {}),
    ...(auth ? { authCache: auth.cache } : {}),
    ...(env.SWEEP_SECRET ? { sweepSecret: env.SWEEP_SECRET } : {}),
    ...(runtime.remoteAddressOf ? { remoteAddressOf: runtime.remoteAddressOf } : {}),
    ...(runtime.headersOf ? { headersOf: runtime.headersOf } : {}),
    trustedProxies: trustedProxies(env.TRUSTED_PROXIES),
    retention: retentionSettings(env),
    ...(env.PUBLIC_BASE_URL ? { publicBaseUrl: env.PUBLIC_BASE_URL } : {}),
    consoleOrigins: env.CONSOLE_ORIGINS,
    // One count per address across replicas, like the API-wide limit.
    ...(redis ? { connectLinkRateLimiter: createRedisRateLimiter(redis, CONNECT_LINK_COMPLETIONS, 'sl:rl:connect-link:') } : {}),
    // Shared through Redis like the rate limit, so a budget holds across replicas.
    trackerBudgets: createTrackerBudgets(
      {
        beaconsPerAddressPerMinute: env.TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE,
        newVisitorBeaconsPerWebsitePerMinute: env.TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE,
      },
      redis,
    ),
  };
  const deps = createCoreDeps({ ...configured, ...chosen });
  const built: BuiltDeps = {
    ...deps,
    syncAuthCache: async () => {
      await auth?.sync();
    },
    async close() {
      await deps.runner.drain();
      await runtime.webhooks.close?.();
      await auth?.unlisten();
      // A load still running would open its store after this close: let it finish first.
      await built.ipLoading?.catch(() => undefined);
      await ip?.store?.close();
      runtime.operatorDatabases?.close?.();
      await redis?.close();
      await db.close();
    },
  };
  if (ipLoading) {
    built.ipLoading = ipLoading.then((loaded) => {
      if (loaded) built.ip = loaded;
      return loaded;
    });
  }
  return built;
}
