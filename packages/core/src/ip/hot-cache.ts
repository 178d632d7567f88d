import type { IpDeps } from './waterfall.ts';

/**
 * An in-process hot cache for lookup results when Redis is not configured: bounded (oldest entries
 * leave first) and honouring each entry's TTL. Results are per account and immutable for their
 * 7 days, so every replica may keep its own copy.
 */
export function createMemoryHotCache(maxEntries = 50_000, now: () => number = Date.now): NonNullable<IpDeps['hotCache']> {
  const entries = new Map<string, { value: string; expires: number }>();
  return {
    async get(key) {
      const e = entries.get(key);
      if (!e) return null;
      if (e.expires <= now()) {
        entries.delete(key);
        return null;
      }
      return e.value;
    },
    async set(key, value, ttlSeconds) {
      entries.delete(key);
      entries.set(key, { value, expires: now() + ttlSeconds * 1000 });
      if (entries.size > maxEntries) {
        const oldest = entries.keys().next();
        if (!oldest.done) entries.delete(oldest.value);
      }
    },
  };
}
