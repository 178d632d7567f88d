import { BoundedLru } from '../kernel/lru.ts';

/**
 * This process's copy of recent lookup results, in front of Redis (when configured) and Postgres.
 * A stored result is fixed for the account until it expires, so every replica may keep its own
 * copy with the entry's own expiry: nothing needs invalidating. Values are frozen because one
 * object answers every request for its key. Bounded: past `maxEntries` the least recently used
 * entry leaves first (lru.ts).
 */
export interface RecentResults<T> {
  get(key: string): T | undefined;
  /** Keeps `value` until `expiresAt` (epoch ms). */
  set(key: string, value: T, expiresAt: number): void;
  readonly size: number;
}

export function createRecentResults<T>(maxEntries = 50_000, now: () => number = Date.now): RecentResults<T> {
  const entries = new BoundedLru<{ value: T; expiresAt: number }>(maxEntries);
  return {
    get(key) {
      const e = entries.get(key);
      if (!e) return undefined;
      if (e.expiresAt > now()) return e.value;
      entries.delete(key);
      return undefined;
    },
    set(key, value, expiresAt) {
      if (expiresAt > now()) entries.set(key, { value, expiresAt });
    },
    get size() {
      return entries.size;
    },
  };
}
