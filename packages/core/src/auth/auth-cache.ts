import type { KeyRecord, Logger } from '../kernel/context.ts';
import { BoundedLru } from '../kernel/lru.ts';
import type { Database, Sql } from '../kernel/sql.ts';

/**
 * Key records by keyed hash, so a lookup that repeats its key skips the database. Correctness rests
 * on invalidation, from two directions:
 * - the database announces every change to a key's status, hash, role, scope or account (triggers
 *   in migrations/functions/auth/sl_notify_auth_changed.sql NOTIFY on `sl_auth_changed`), and every process clears its cache when the
 *   notification arrives, or when its listening connection (re)connects, since it may have missed
 *   some while away;
 * - a request in this process that may change keys (every partner POST, every operator command)
 *   clears the cache before its response leaves, so a client that sees "rotated" cannot then get
 *   the old key accepted here, however late the notification.
 * A lookup that started before an invalidation never stores its (possibly stale) row: `begin()`
 * hands out the generation, and `store` drops rows from an older one. Entries also expire after a
 * TTL, which bounds staleness should a notification be lost with no reconnect to tell us.
 */
export interface AuthCache {
  /** Off while the process cannot be sure it hears about changes: every lookup reads the database. */
  enabled: boolean;
  get(key: string): KeyRecord | undefined;
  /** The generation to pass to `store` for a lookup about to read the database. */
  begin(): number;
  store(key: string, record: KeyRecord, generation: number): void;
  invalidateAll(): void;
  readonly size: number;
}

export interface AuthCacheOptions {
  /** How long an entry may be served without a database read, in ms. */
  ttlMs: number;
  maxEntries: number;
  /**
   * A one-way digest of the presented key, the cache's index: plaintext keys are never held. A
   * plain SHA-256 suffices here (keys carry 190 random bits, so no digest can be searched back to
   * a key) and costs a tenth of the keyed HMAC the database lookup needs, whose native object per
   * call was a quarter of a cached request's CPU.
   */
  digest: (key: string) => string;
  now?: () => number;
}

export function createAuthCache({ ttlMs, maxEntries, digest, now = Date.now }: AuthCacheOptions): AuthCache {
  const entries = new BoundedLru<{ record: KeyRecord; expires: number }>(maxEntries);
  let generation = 0;
  return {
    enabled: true,
    get(key) {
      if (!this.enabled) return undefined;
      const hash = digest(key);
      const e = entries.get(hash);
      if (!e) return undefined;
      if (e.expires <= now()) {
        entries.delete(hash);
        return undefined;
      }
      return e.record;
    },
    begin: () => generation,
    store(key, record, from) {
      if (from !== generation || !this.enabled) return;
      entries.set(digest(key), { record, expires: now() + ttlMs });
    },
    invalidateAll() {
      generation++;
      entries.clear();
    },
    get size() {
      return entries.size;
    },
  };
}

/** The channel the triggers of migrations/functions/auth/sl_notify_auth_changed.sql notify when a key or its account changes. */
export const AUTH_CHANGED_CHANNEL = 'sl_auth_changed';

/** Payloads with this prefix are the listener's own probes, not changes: they clear nothing. */
export const AUTH_PROBE_PREFIX = 'probe:';

export interface ListenOptions {
  /** How often to check that notifications still arrive (a probe round trip), in ms. */
  heartbeatMs?: number;
  /** How long a probe may take before the listener counts as deaf, in ms. */
  probeTimeoutMs?: number;
  log?: Logger;
}

/**
 * A cache that only serves while the process can hear about changes. Any notification but our own
 * probes clears it, and so does every (re)connection of the listener. Before handing it out, and
 * then every `heartbeatMs`, the listener notifies itself and waits for the echo: behind a
 * transaction pooler (PgBouncer, Supavisor in transaction mode) LISTEN is acknowledged but nothing
 * is ever delivered, and a half-open connection delivers nothing either. While the echo does not
 * come back the cache is cleared and switched off, so every request reads its key from the
 * database; it comes back on once the echo does.
 */
export async function listenAuthCache(
  db: Pick<Database, 'listen'> & Sql,
  opts: AuthCacheOptions & ListenOptions,
): Promise<{
  cache: AuthCache;
  /** Resolves once every change committed before the call has been heard (its probe echoed). */
  sync(): Promise<void>;
  unlisten(): Promise<void>;
}> {
  const cache = createAuthCache(opts);
  const echoes = new Map<string, () => void>();
  const sub = await db.listen(
    AUTH_CHANGED_CHANNEL,
    (payload) => {
      if (payload.startsWith(AUTH_PROBE_PREFIX)) echoes.get(payload)?.();
      else cache.invalidateAll();
    },
    () => cache.invalidateAll(),
  );
  const timeoutMs = opts.probeTimeoutMs ?? 2000;
  let probes = 0;
  const hears = async (): Promise<boolean> => {
    const marker = `${AUTH_PROBE_PREFIX}${++probes}:${Math.random().toString(36).slice(2)}`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const echoed = new Promise<boolean>((resolve) => {
        echoes.set(marker, () => resolve(true));
        timer = setTimeout(() => resolve(false), timeoutMs);
      });
      await db`select pg_notify(${AUTH_CHANGED_CHANNEL}, ${marker})`;
      return await echoed;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      echoes.delete(marker);
    }
  };
  const check = async () => {
    const ok = await hears();
    if (!ok) cache.invalidateAll();
    if (ok !== cache.enabled) {
      opts.log?.[ok ? 'info' : 'warn'](
        ok
          ? 'auth cache on: change notifications arrive'
          : 'auth cache off: change notifications do not arrive (a transaction pooler, or a lost connection); keys are read from the database',
        {},
      );
    }
    cache.enabled = ok;
  };
  cache.enabled = false;
  await check();
  let running = false;
  const heartbeat = setInterval(() => {
    if (running) return;
    running = true;
    void check().finally(() => (running = false));
  }, opts.heartbeatMs ?? 10_000);
  // Never what keeps a process alive.
  (heartbeat as { unref?: () => void }).unref?.();
  return {
    cache,
    // Notifications arrive in commit order, so the echo of a probe sent now follows them all.
    sync: async () => {
      if (!(await hears())) throw new Error(`no echo on ${AUTH_CHANGED_CHANNEL} within ${timeoutMs} ms`);
    },
    unlisten: async () => {
      clearInterval(heartbeat);
      await sub.unlisten();
    },
  };
}

declare module '../kernel/context.ts' {
  interface CoreDeps {
    /**
     * Key records by hash, invalidated by database notifications and by this process's own
     * key-changing requests (auth-cache.ts); absent where nothing listens, and then every request
     * reads its key from the database.
     */
    authCache?: AuthCache;
  }
}
