// Types only: the Node host loads ioredis when REDIS_URL is set, the Deno entry imports it itself,
// and each hands the class to buildDeps (build-deps.ts), so both build their client here.
import type { Redis, RedisOptions } from 'ioredis';
import type { Logger } from '../kernel/context.ts';
import { createMemoryRateLimiter, createRedisRateLimiter, type RateLimiter, type RedisEval } from '../kernel/limits.ts';

/**
 * How long we wait for Redis. A healthy Redis near the service answers in about a millisecond, so
 * these only bind when it is down, paused or cut off, and a request never waits on more than one:
 * - command: the most a request waits for a reply (only the requests in flight when Redis hangs);
 * - socket: how long a connection with unanswered commands may stay silent before it is dropped,
 *   which marks Redis down, so later requests skip it instead of each waiting out `command`;
 * - connect: how long one connection attempt may hang (a black-holed address, a slow TLS
 *   handshake to a managed Redis); requests do not wait for it, they skip Redis meanwhile;
 * - firstConnect: how long the first requests of a fresh process wait for its first connection;
 * - reconnect: attempts back off from 100 ms, doubling, to at most 2 s, so a returning Redis is
 *   used again within about 2 s without a dead one being hammered.
 */
export const REDIS_TIMEOUTS = { commandMs: 300, socketMs: 1000, connectMs: 1000, firstConnectMs: 500, reconnectMaxMs: 2000 } as const;

/** The one set of client options both hosts use, so the Node host and the Edge Functions cannot drift. */
export const REDIS_CLIENT_OPTIONS = {
  connectTimeout: REDIS_TIMEOUTS.connectMs,
  commandTimeout: REDIS_TIMEOUTS.commandMs,
  socketTimeout: REDIS_TIMEOUTS.socketMs,
  // A command issued while the connection is down fails at once instead of queueing for a
  // reconnect that may take seconds; so does one in flight when the connection drops.
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  retryStrategy: (attempt: number) => Math.min(50 * 2 ** attempt, REDIS_TIMEOUTS.reconnectMaxMs),
} satisfies RedisOptions;

/** Raised without sending anything while Redis is known to be down. */
export class RedisUnavailableError extends Error {
  constructor() {
    super('Redis is unavailable');
    this.name = 'RedisUnavailableError';
  }
}

/**
 * The commands Sightline sends to Redis, on a client that knows whether Redis is up. While the
 * connection is down every command rejects at once with RedisUnavailableError, without touching
 * the network, so callers fall back (rate limits, lookup cache) with no added latency; the client
 * keeps reconnecting by itself and commands go to Redis again as soon as it is back.
 */
export interface SharedRedis extends RedisEval {
  get(key: string): Promise<string | null>;
  /** Sets `key` to `value`, expiring after `ttlSeconds`. */
  set(key: string, value: string, ttlSeconds: number): Promise<void>;
  /** Whether the connection is up now (commands are sent). */
  readonly available: boolean;
  close(): Promise<void>;
}

/**
 * Connects to `url` with REDIS_CLIENT_OPTIONS and tracks the connection from the client's events.
 * An outage is logged once: one warning when Redis becomes unreachable (at start, or later), one
 * info when it is back; the client's per-attempt errors are listened to (so ioredis never prints
 * an unhandled error event) but not logged. Commands issued before the first connection attempt
 * has settled wait for it, bounded, so a fresh process (an Edge Function's cold start) counts its
 * first requests in Redis rather than locally.
 */
export function connectRedis(RedisClient: typeof Redis, url: string, log: Logger): SharedRedis {
  const client = new RedisClient(url, REDIS_CLIENT_OPTIONS);
  let downSince: number | undefined;
  let lastError: string | undefined;
  let closing = false;
  let settled = false;
  let settle = () => {};
  const firstAttempt = new Promise<void>((resolve) => {
    settle = () => {
      settled = true;
      resolve();
    };
  });
  let replyErrorLoggedAt = 0;

  client.on('error', (err: Error) => {
    lastError = err.message;
  });
  const onDown = () => {
    settle();
    if (closing || downSince !== undefined) return;
    downSince = Date.now();
    log.warn('Redis is unreachable: rate limits are enforced per process and IP lookups skip the shared cache until it is back', {
      error: lastError ?? 'connection closed',
    });
  };
  client.on('close', onDown);
  // 'end' without a 'close' first: the client could not even start a connection and gives up.
  client.on('end', onDown);
  client.on('ready', () => {
    settle();
    lastError = undefined;
    if (downSince === undefined) return;
    log.info('Redis is reachable again: rate limits and the IP lookup cache are shared again', { down_ms: Date.now() - downSince });
    downSince = undefined;
  });

  async function run<T>(command: () => Promise<T>): Promise<T> {
    if (client.status !== 'ready' && !settled) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        firstAttempt,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, REDIS_TIMEOUTS.firstConnectMs);
        }),
      ]);
      clearTimeout(timer);
    }
    if (client.status !== 'ready') throw new RedisUnavailableError();
    try {
      return await command();
    } catch (err) {
      // Connection failures (timeouts, a dropped connection) are the outage the events above log
      // once. An error Redis itself answers (out of memory, read-only replica) is not: it is logged
      // here, at most once a minute, because the caller's fallback would otherwise hide it.
      if (err instanceof Error && err.name === 'ReplyError' && Date.now() - replyErrorLoggedAt > 60_000) {
        replyErrorLoggedAt = Date.now();
        log.warn('Redis refused a command; falling back to this process', { error: err.message });
      }
      throw err;
    }
  }

  return {
    eval: (script, numKeys, ...args) => run(() => client.eval(script, numKeys, ...args)),
    get: (key) => run(() => client.get(key)),
    set: async (key, value, ttlSeconds) => {
      await run(() => client.set(key, value, 'EX', ttlSeconds));
    },
    get available() {
      return client.status === 'ready';
    },
    async close() {
      closing = true;
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
}

/**
 * The API-wide rate limit for this configuration: one count shared by every replica through Redis
 * (falling back to a per-process count while Redis is down, limits.ts), or per process without it.
 */
export function rateLimiterFor(config: { RATE_LIMIT_PER_MINUTE: number }, redis: SharedRedis | undefined): RateLimiter {
  const policy = { limit: config.RATE_LIMIT_PER_MINUTE, windowSeconds: 60 };
  return redis ? createRedisRateLimiter(redis, policy) : createMemoryRateLimiter(policy);
}
