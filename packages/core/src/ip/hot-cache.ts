/**
 * This process's copy of recent lookup results, in front of Redis (when configured) and Postgres.
 * A stored result is fixed for the account until it expires, so every replica may keep its own
 * copy with the entry's own expiry: nothing needs invalidating. Values are frozen because one
 * object answers every request for its key. Bounded: past `maxEntries` the least recently used
 * entry leaves first.
 */
export interface RecentResults<T> {
  get(key: string): T | undefined;
  /** Keeps `value` until `expiresAt` (epoch ms). */
  set(key: string, value: T, expiresAt: number): void;
  readonly size: number;
}

export function createRecentResults<T>(maxEntries = 50_000, now: () => number = Date.now): RecentResults<T> {
  const entries = new Map<string, { value: T; expiresAt: number }>();
  return {
    get(key) {
      const e = entries.get(key);
      if (!e) return undefined;
      entries.delete(key);
      if (e.expiresAt <= now()) return undefined;
      entries.set(key, e);
      return e.value;
    },
    set(key, value, expiresAt) {
      if (expiresAt <= now()) return;
      entries.delete(key);
      entries.set(key, { value, expiresAt });
      while (entries.size > maxEntries) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        entries.delete(oldest.value);
      }
    },
    get size() {
      return entries.size;
    },
  };
}
