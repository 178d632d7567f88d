import {
  type BuiltDeps,
  buildDeps,
  type CoreDeps,
  connectConfiguredPostgres,
  createApiServer,
  type Database,
  EDGE_DATA_FILES,
  type FunctionDefinition,
  type Logger,
  listedDomainTraffic,
  parseEnv,
  RECEIVER_ANSWER_MAX_BYTES,
  readBodyTextPrefix,
  refusedAddressReason,
  type WebhookTransport,
} from '@sightline/core';
import { openOperatorDatabases, parseIpDatabasesSetting } from '@sightline/core/ip/operator-databases/index';
import { Redis } from 'ioredis';
import { createDenoDnsResolver } from './dns-resolver.ts';
import { snapshotIpSources } from './ip-sources.ts';
import { denoDatabaseFiles } from './operator-database-files.ts';

/** Supabase's runtime keeps an isolate alive for promises handed to waitUntil. */
declare const EdgeRuntime: { waitUntil(p: Promise<unknown>): void } | undefined;

/**
 * The Deno entry point shared by every Supabase function: parse the environment once, build the
 * dependencies, and serve one function behind the gateway (which strips `/functions/v1`, so the
 * function is mounted at `/<name>`).
 */

const jsonLogger: Logger = {
  debug: (msg, fields) => console.debug(JSON.stringify({ level: 'debug', msg, ...fields })),
  info: (msg, fields) => console.log(JSON.stringify({ level: 'info', msg, ...fields })),
  warn: (msg, fields) => console.warn(JSON.stringify({ level: 'warn', msg, ...fields })),
  error: (msg, fields) => console.error(JSON.stringify({ level: 'error', msg, ...fields })),
};

/**
 * Deno has no connect-time lookup hook on fetch, so host names are resolved and checked first.
 * A rebinding resolver could still answer differently on connect; the Node host closes that gap
 * with a guarded lookup (see docs/decisions/webhooks.md, "Reachable"). Deno's client does not cap connections per host,
 * so a request is not queued behind others and the timeout can start with the fetch. As on Node,
 * only the first RECEIVER_ANSWER_MAX_BYTES of an answer are read and a longer body is cancelled.
 */
function denoWebhookTransport(allowPrivate: boolean): WebhookTransport {
  return {
    async request(url, init) {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
      const literal = refusedAddressReason(host, { allowPrivate });
      if (literal) throw new Error(`refused to connect: ${literal}`);
      const answers = await Promise.all([
        Deno.resolveDns(host, 'A').catch(() => [] as string[]),
        Deno.resolveDns(host, 'AAAA').catch(() => [] as string[]),
      ]);
      for (const address of answers.flat()) {
        const refused = refusedAddressReason(address, { allowPrivate });
        if (refused) throw new Error(`refused to connect to ${host}: ${refused}`);
      }
      const res = await fetch(url, {
        method: init.method,
        headers: init.headers,
        body: init.body ?? null,
        redirect: 'manual',
        signal: AbortSignal.timeout(init.timeoutMs),
      });
      // The status is the answer; a body that stalls or breaks afterwards leaves it standing.
      const prefix = await readBodyTextPrefix(res, init.maxAnswerBytes ?? RECEIVER_ANSWER_MAX_BYTES).catch(() => null);
      return { status: res.status, body: prefix?.text ?? '', headers: Object.fromEntries(res.headers) };
    },
  };
}

export interface DenoHostOptions {
  /** Overrides for tests: a database opened elsewhere (PGlite) instead of DATABASE_URL. */
  db?: Database;
  /** Mount prefix for `functions` endpoints; '' behind the Supabase gateway. */
  functionsPrefix?: string;
  /** Load the local IP data (the functions that identify IPs). */
  ipData?: boolean;
}

/**
 * Everything a function runs with, from the function's secrets, through core's buildDeps as on the
 * Node host. What is Deno's own: Postgres from SUPABASE_DB_URL (Supabase applies the migrations),
 * the fetch-based webhook transport, and the IP data from the snapshot `npm run build:edge-data`
 * writes next to this file, which config.toml ships as the IP functions' static files
 * (IP_DATA_DIR overrides where it is read from). Without it, or with one that does not decode, the
 * function still starts, logs why, and answers 503 to lookups. An isolate is short-lived, so it
 * holds no listening connection: no auth cache, and imports reach it at its next cold start.
 */
export async function buildDenoDeps(opts: DenoHostOptions = {}): Promise<BuiltDeps> {
  const raw = Deno.env.toObject();
  // Supabase injects SUPABASE_DB_URL; an explicit DATABASE_URL wins.
  const env = parseEnv({ ...raw, DATABASE_URL: raw.DATABASE_URL ?? raw.SUPABASE_DB_URL });
  if (!env.SIGHTLINE_SECRET) throw new Error('SIGHTLINE_SECRET must be set as a function secret');
  let db = opts.db;
  if (!db) {
    if (!env.DATABASE_URL) throw new Error('DATABASE_URL (or SUPABASE_DB_URL) must be set');
    db = connectConfiguredPostgres(env, env.DATABASE_URL);
  }
  const dir = raw.IP_DATA_DIR ? new URL(`${raw.IP_DATA_DIR.replace(/\/?$/, '/')}`, `file://${Deno.cwd()}/`) : new URL('./ip-data/', import.meta.url);
  return buildDeps(env, {
    db,
    secret: env.SIGHTLINE_SECRET,
    log: jsonLogger,
    webhooks: denoWebhookTransport(env.ALLOW_PRIVATE_WEBHOOKS),
    redisClient: Redis,
    listens: false,
    ...(opts.ipData ? { ipSources: snapshotIpSources((name) => Deno.readFile(new URL(name, dir))) } : {}),
    dnsResolver: (dns) => createDenoDnsResolver(dns.servers),
    // As on the Node host: a missing, unreadable or unknown file stops start-up, naming the file.
    ...(opts.ipData && env.IP_DATABASES
      ? {
          operatorDatabases: await openOperatorDatabases({
            paths: parseIpDatabasesSetting(env.IP_DATABASES, (p) => decodeURIComponent(new URL(p, `file://${Deno.cwd()}/`).pathname)),
            files: denoDatabaseFiles,
            log: jsonLogger,
            domainTraffic: (domain) => listedDomainTraffic(domain),
          }),
        }
      : {}),
    onIpDataError: (err) => {
      const missing = err instanceof Deno.errors.NotFound;
      jsonLogger.error(
        missing
          ? 'IP data not found: run `npm run build:edge-data` before deploying; IP lookups answer 503'
          : 'IP data could not be loaded; IP lookups answer 503',
        {
          dir: dir.href,
          files: Object.values(EDGE_DATA_FILES),
          error: err instanceof Error ? err.message : String(err),
        },
      );
    },
    handOff: (p) => {
      if (typeof EdgeRuntime !== 'undefined') EdgeRuntime.waitUntil(p);
    },
    // serveFunction hands Deno's connection info to the app as its bindings.
    remoteAddressOf: (bindings) => {
      const addr = (bindings as { remoteAddr?: { hostname?: unknown } } | undefined)?.remoteAddr;
      return typeof addr?.hostname === 'string' ? addr.hostname : undefined;
    },
  });
}

export function createDenoApp(deps: CoreDeps, def: FunctionDefinition, functionsPrefix = '') {
  return createApiServer(deps, [def], { functionsPrefix });
}

/** What each supabase/functions/<name>/index.ts calls. */
export async function serveFunction(def: FunctionDefinition): Promise<void> {
  const deps = await buildDenoDeps({ ipData: def.usesIpData === true });
  const app = createDenoApp(deps, def);
  Deno.serve((req, info) => app.fetch(req, { remoteAddr: info.remoteAddr }));
}
