import type { Caller } from './context.ts';
import type { Database } from './db.ts';

/**
 * Key records by keyed hash, so a lookup that repeats its key skips the database. Correctness rests
 * on invalidation, from two directions:
 * - the database announces every change to a key's status, hash, role or account (triggers in
 *   migration 0005 NOTIFY on `sl_auth_changed`), and every process clears its cache when the
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
  get(key: string): Caller | undefined;
  /** The generation to pass to `store` for a lookup about to read the database. */
  begin(): number;
  store(key: string, caller: Caller, generation: number): void;
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
  // Insertion order is eviction order: a hit moves its entry to the end (least recently used first).
  const entries = new Map<string, { caller: Caller; expires: number }>();
  let generation = 0;
  return {
    get(key) {
      const hash = digest(key);
      const e = entries.get(hash);
      if (!e) return undefined;
      if (e.expires <= now()) {
        entries.delete(hash);
        return undefined;
      }
      entries.delete(hash);
      entries.set(hash, e);
      return e.caller;
    },
    begin: () => generation,
    store(key, caller, from) {
      if (from !== generation) return;
      const hash = digest(key);
      entries.delete(hash);
      entries.set(hash, { caller, expires: now() + ttlMs });
      while (entries.size > maxEntries) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        entries.delete(oldest.value);
      }
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

/** The channel migration 0005's triggers notify when a key or its account changes. */
export const AUTH_CHANGED_CHANNEL = 'sl_auth_changed';

/**
 * A cache that is only handed out once the process is listening for changes; any notification, and
 * every (re)connection of the listener, clears it.
 */
export async function listenAuthCache(
  db: Pick<Database, 'listen'>,
  opts: AuthCacheOptions,
): Promise<{ cache: AuthCache; unlisten(): Promise<void> }> {
  const cache = createAuthCache(opts);
  const sub = await db.listen(AUTH_CHANGED_CHANNEL, () => cache.invalidateAll(), () => cache.invalidateAll());
  return { cache, unlisten: () => sub.unlisten() };
}
