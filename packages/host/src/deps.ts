import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  builtinProcessor,
  connectPostgres,
  createCoreDeps,
  createKeyring,
  listenAuthCache,
  migrate,
  type CoreDeps,
  type Database,
  type Env,
  type Logger,
  type PaymentProcessor,
} from '@sightline/core';
import { createStripeProcessor } from '@sightline/core/payments/stripe';
import { openPglite } from './db-pglite.ts';
import { packageIpSources } from './ip-base.ts';
import { ipDepsFor } from './ip-data.ts';
import { createLogger } from './logger.ts';
import { nodeHmacSha256Hex, nodeSha256Base64 } from './node-hmac.ts';
import { loadMigrations } from './migrations.ts';
import { connectRedis, rateLimiterFor, type SharedRedis } from './redis.ts';
import { createNodeWebhookTransport } from './webhook-transport.ts';

export interface HostDeps extends CoreDeps {
  db: Database;
  close(): Promise<void>;
}

/**
 * The server secret: SIGHTLINE_SECRET in deploy; on the embedded default, generated into the data
 * directory on first start (mode 0600) so `npm start` needs no set-up. With DATABASE_URL it must
 * come from the environment — a secret on one replica's disk would orphan every key.
 */
export async function resolveServerSecret(env: Env): Promise<string> {
  if (env.SIGHTLINE_SECRET) return env.SIGHTLINE_SECRET;
  if (env.DATABASE_URL) {
    throw new Error('SIGHTLINE_SECRET is required when DATABASE_URL is set (at least 32 characters; keep it stable)');
  }
  const file = path.join(env.DATA_DIR, 'server-secret');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(env.DATA_DIR, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(file, 0o600);
  return secret;
}

export async function openDatabase(env: Env): Promise<Database> {
  if (env.DATABASE_URL) {
    return connectPostgres({ url: env.DATABASE_URL, max: env.DATABASE_POOL_MAX, prepare: env.DATABASE_PREPARE });
  }
  await mkdir(env.DATA_DIR, { recursive: true });
  return openPglite(path.join(env.DATA_DIR, 'pglite'));
}

export async function migrateDatabase(db: Database): Promise<string[]> {
  return migrate(db, await loadMigrations());
}

export function paymentProcessorFor(env: Env): PaymentProcessor {
  if (env.PAYMENTS_PROVIDER === 'stripe' && env.STRIPE_SECRET_KEY) return createStripeProcessor(env.STRIPE_SECRET_KEY);
  return builtinProcessor;
}

/** The Redis shared by the replicas when REDIS_URL is set (redis.ts: what an outage means for each use). */
export async function redisFor(env: Env, log: Logger): Promise<SharedRedis | undefined> {
  if (!env.REDIS_URL) return undefined;
  // Loaded only when configured: a server without Redis does not carry the client.
  const { Redis } = await import('ioredis');
  return connectRedis(Redis, env.REDIS_URL, log);
}

/** Builds every dependency from validated configuration; the only place the host wires things. */
export async function buildHostDeps(env: Env, log: Logger = createLogger(env.LOG_LEVEL)): Promise<HostDeps> {
  const keyring = await createKeyring(await resolveServerSecret(env), { hmacSha256Hex: nodeHmacSha256Hex });
  const db = await openDatabase(env);
  // Before anything reads the schema (the IP layers are loaded below).
  const applied = await migrateDatabase(db);
  if (applied.length) log.info('migrations applied', { migrations: applied });
  const webhooks = createNodeWebhookTransport({ allowPrivate: env.ALLOW_PRIVATE_WEBHOOKS });
  const redis = await redisFor(env, log);
  const limiter = rateLimiterFor(env, redis);
  const auth =
    env.AUTH_CACHE_TTL_SECONDS > 0
      ? await listenAuthCache(db, { ttlMs: env.AUTH_CACHE_TTL_SECONDS * 1000, maxEntries: env.AUTH_CACHE_MAX_KEYS, digest: nodeSha256Base64, log })
      : undefined;
  const ip = env.IP_DATA ? await ipDepsFor(env, db, log, redis, packageIpSources) : undefined;
  const deps = createCoreDeps({
    db,
    keyring,
    webhooks,
    log,
    allowPrivateWebhooks: env.ALLOW_PRIVATE_WEBHOOKS,
    rateLimiter: limiter,
    payments: paymentProcessorFor(env),
    ...(ip ? { ip } : {}),
    ...(auth ? { authCache: auth.cache } : {}),
    ...(env.SWEEP_SECRET ? { sweepSecret: env.SWEEP_SECRET } : {}),
  });
  return {
    ...deps,
    async close() {
      await deps.runner.drain();
      await webhooks.close();
      await auth?.unlisten();
      await ip?.store.close();
      await redis?.close();
      await db.close();
    },
  };
}
