import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type BuiltDeps,
  buildDeps,
  connectConfiguredPostgres,
  type Database,
  type Env,
  type HostRuntime,
  type Logger,
  listedDomainTraffic,
  migrate,
} from '@sightline/core';
import { openPglite } from './db-pglite.ts';
import { createNodeDnsResolver } from './dns-resolver.ts';
import { packageIpSources } from './ip-base.ts';
import { createLogger } from './logger.ts';
import { loadSchema } from './migrations.ts';
import { nodeHmacSha256Hex, nodeSha256Base64 } from './node-hmac.ts';
import { nodeRemoteAddress, nodeRequestHeaders } from './node-remote-address.ts';
import { openOperatorDatabases, parseIpDatabasesSetting } from './operator-databases.ts';
import { createNodeWebhookTransport } from './webhook-transport.ts';

export type HostDeps = BuiltDeps;

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
  if (env.DATABASE_URL) return connectConfiguredPostgres(env, env.DATABASE_URL);
  await mkdir(env.DATA_DIR, { recursive: true });
  return openPglite(path.join(env.DATA_DIR, 'pglite'), { sharedBuffers: env.PGLITE_SHARED_BUFFERS });
}

export async function migrateDatabase(db: Database): Promise<string[]> {
  return migrate(db, await loadSchema());
}

/**
 * What the Node runtime supplies to core's buildDeps, over a database the caller opened and
 * migrated: the undici webhook transport, Node's HMAC and digest, the npm packages' IP data, ioredis
 * when REDIS_URL is set, the socket peer and headers from Node's request. The host and the test
 * harness (tests/support/app.ts) both build from it, so tests run the composition production runs.
 */
export async function nodeHostRuntime(env: Env, parts: Pick<HostRuntime, 'db' | 'secret' | 'log'>): Promise<HostRuntime> {
  return {
    ...parts,
    webhooks: createNodeWebhookTransport({ allowPrivate: env.ALLOW_PRIVATE_WEBHOOKS }),
    hmacSha256Hex: nodeHmacSha256Hex,
    // Loaded only when configured: a server without Redis does not carry the client.
    ...(env.REDIS_URL ? { redisClient: (await import('ioredis')).Redis } : {}),
    listens: true,
    digest: nodeSha256Base64,
    ipSources: packageIpSources,
    dnsResolver: (dns) => createNodeDnsResolver({ servers: dns.servers, timeoutMs: dns.timeoutMs }),
    // A missing, unreadable or unknown file stops start-up here, naming the file.
    ...(env.IP_DATABASES
      ? {
          operatorDatabases: await openOperatorDatabases({
            paths: parseIpDatabasesSetting(env.IP_DATABASES),
            log: parts.log,
            domainTraffic: (domain) => listedDomainTraffic(domain),
          }),
        }
      : {}),
    remoteAddressOf: nodeRemoteAddress,
    headersOf: nodeRequestHeaders,
  };
}

/**
 * Everything the Node host runs with: its database (PGlite on the embedded default, else Postgres)
 * migrated and the Node runtime's pieces (nodeHostRuntime); the rest is decided by core's
 * buildDeps, as on the Supabase entry.
 */
export async function buildHostDeps(
  env: Env,
  log: Logger = createLogger(env.LOG_LEVEL),
  opts: {
    /**
     * The server's choice (main.ts): answer at once and load the IP data behind it, IP lookups
     * waiting for it. A data install that fails to load still stops the process, as at start.
     */
    loadIpInBackground?: boolean;
  } = {},
): Promise<HostDeps> {
  const secret = await resolveServerSecret(env);
  const db = await openDatabase(env);
  // Before anything reads the schema (the IP layers are loaded by buildDeps).
  const applied = await migrateDatabase(db);
  if (applied.length) log.info('migrations applied', { migrations: applied });
  return buildDeps(env, {
    ...(await nodeHostRuntime(env, { db, secret, log })),
    ...(opts.loadIpInBackground
      ? {
          loadIpInBackground: true,
          onIpDataError: (err: unknown) => {
            log.error('the local IP data failed to load; stopping', { error: err instanceof Error ? err.message : String(err) });
            process.exit(1);
          },
        }
      : {}),
  });
}
