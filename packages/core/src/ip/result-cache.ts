import type { CoreDeps } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import { BoundedLru } from '../kernel/lru.ts';
import type { IpOperation, Verdict } from './types.ts';

/**
 * The account's 7-day results of IP lookups, in three tiers: this process's memory, then Redis (the
 * replicas' shared copy, when configured), then Postgres (`ip_cache`, the record). This module is
 * the only code that names the key, reads any tier or writes one, as Unkey's tiered cache does:
 * callers ask it and never touch a tier. A stored result is fixed for the account until it expires,
 * so a copy in an upper tier keeps the row's own expiry and nothing ever needs invalidating.
 *
 * The Postgres tier is written in the transaction that pays for the result, so a result is kept
 * exactly when it was paid for: `storeResult` below (credits, sl_charge_lookup), and for the
 * tracker's identifications sl_settle_identifications (IDs), whose rows `readStoredResults` reads.
 *
 * The one exception to "never invalidated" is erasure (lifecycle/erase-personal-data.ts): the
 * erasing SQL notifies IP_RESULTS_ERASED_CHANNEL at commit and every listening process drops its
 * recent results; the erasing process also drops the account's shared copies (`forgetResults`).
 */

/** Spec: results are cached for 7 days; a repeat within them is served at no extra cost. */
export const RESULT_TTL_SECONDS = 7 * 24 * 3600;

/** Whose result for which address: the cache's key, as results are stored. */
export interface LookupScope {
  accountId: string;
  operation: IpOperation;
  ip: string;
}

/** A result as a cache serves it: shared by every request for its key, so frozen. */
export type CachedVerdict = Readonly<Verdict & { cached: true }>;

/**
 * This process's copy of recent results. Bounded: past `maxEntries` the least recently used entry
 * leaves first (lru.ts).
 */
export interface RecentResults<T> {
  get(key: string): T | undefined;
  /** Keeps `value` until `expiresAt` (epoch ms). */
  set(key: string, value: T, expiresAt: number): void;
  /** Drops everything (an erasure: the Postgres tier refills what is still stored). */
  clear(): void;
  readonly size: number;
}

/** Results shared by the replicas (Redis); values are `SharedEntry` JSON. */
export interface SharedResults {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlSeconds: number): Promise<void>;
  /** Deletes every key matching `pattern` (Redis glob); rare (an erasure), so a scan is fine. */
  forget(pattern: string): Promise<void>;
}

/** What the erasure SQL (sl_erase_webhook_events, their last step) notifies at commit: the account's id, or '' for every account. */
export const IP_RESULTS_ERASED_CHANNEL = 'sl_ip_results_erased';

/** What the shared results hold: the result and when it stops being served (epoch ms). */
export interface SharedEntry {
  expires_at: number;
  result: Verdict;
}

/** The upper tiers, as the host composes them into the IP dependencies (either may be absent). */
export interface ResultTiers {
  /** This process's recent results, in front of everything else. */
  recentResults?: RecentResults<CachedVerdict>;
  /** Results shared by the replicas in front of Postgres (Redis). */
  sharedResults?: SharedResults;
}

/** An account's result for an address as Postgres keeps it, with the time it has left in the database's clock. */
export interface StoredResult {
  result: Verdict;
  ttlMs: number;
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
    clear() {
      entries.clear();
    },
    get size() {
      return entries.size;
    },
  };
}

// v2: the shared cache holds `SharedEntry` values (v1 held bare results, which a replica still on the
// old code would misread during a rolling deploy).
const KEY_PREFIX = 'sl:ip:v2:';

function keyOf(scope: LookupScope): string {
  return `${KEY_PREFIX}${scope.operation}:${scope.accountId}:${scope.ip}`;
}

/**
 * After an erasure has committed: drops this process's recent results and every shared copy of the
 * account's results (null: every account's), so no tier above Postgres serves what was erased. The
 * account's other results are read from Postgres again at their next use. Other processes drop
 * theirs on the erasure's notification (IP_RESULTS_ERASED_CHANNEL). A Redis failure is logged by
 * the caller and leaves copies that expire with their results (at most 7 days).
 */
export async function forgetResults(tiers: ResultTiers, accountId: string | null): Promise<void> {
  tiers.recentResults?.clear();
  await tiers.sharedResults?.forget(`${KEY_PREFIX}*:${accountId ?? '*'}:*`);
}

/** Keeps a result in this process until its expiry; the frozen copy is what a hit returns. */
function remember(tiers: ResultTiers, key: string, result: Verdict, expiresAt: number): CachedVerdict {
  Object.freeze(result.matches);
  if (result.decision_makers) Object.freeze(result.decision_makers);
  const hit = Object.freeze({ ...result, cached: true as const });
  tiers.recentResults?.set(key, hit, expiresAt);
  return hit;
}

/** A shared-results value, or null for one this version cannot read (it is then looked up afresh). */
function sharedEntry(text: string): SharedEntry | null {
  try {
    const v = JSON.parse(text) as Partial<SharedEntry> | null;
    return v && typeof v.expires_at === 'number' && v.result && typeof v.result === 'object' ? (v as SharedEntry) : null;
  } catch {
    return null;
  }
}

interface Row {
  result: string;
  ttl_ms: number;
}

// The remaining lifetime is worked out by the database (expires_at − now()) and turned into an expiry
// in this process's clock here, so the two clocks never have to agree.
const stored = (r: Row): StoredResult => ({ result: JSON.parse(r.result) as Verdict, ttlMs: r.ttl_ms });

/**
 * The account's unexpired result for the address, or null: this process's memory, then Redis (a
 * failure to answer is a miss), then Postgres. A hit in a lower tier is copied into this process
 * with its own expiry. `preread` is the Postgres row when the caller has read it already (the
 * tracker worker reads a whole claim's with `readStoredResults`; null when none is stored); left
 * out, it is read here.
 */
export async function readCachedResult(
  ctx: CoreDeps,
  tiers: ResultTiers,
  scope: LookupScope,
  preread?: StoredResult | null,
): Promise<CachedVerdict | null> {
  const key = keyOf(scope);
  const recent = tiers.recentResults?.get(key);
  if (recent) return recent;
  const shared = await tiers.sharedResults?.get(key).catch(() => null);
  const entry = shared ? sharedEntry(shared) : null;
  if (entry && entry.expires_at > Date.now()) return remember(tiers, key, entry.result, entry.expires_at);
  const row = preread !== undefined ? preread : await readStoredResult(ctx, scope);
  return row ? remember(tiers, key, row.result, Date.now() + row.ttlMs) : null;
}

async function readStoredResult(ctx: CoreDeps, scope: LookupScope): Promise<StoredResult | null> {
  const [row] = await ctx.db<Row>`
    select result::text as result, (extract(epoch from (expires_at - now())) * 1000)::float8 as ttl_ms from ip_cache
    where account_id = ${scope.accountId} and operation = ${scope.operation} and ip = ${scope.ip}::inet and expires_at > now()`;
  return row ? stored(row) : null;
}

/**
 * The unexpired Postgres results of many (account, address) pairs in one statement, by the caller's
 * key: the tracker worker reads a whole claim's this way instead of one round trip per visitor. Each
 * pair is its own primary-key probe (the lateral subquery with a LIMIT is never flattened into a
 * join), so the plan stays a handful of index reads however large ip_cache grows.
 */
export async function readStoredResults(
  ctx: CoreDeps,
  operation: IpOperation,
  wanted: readonly { key: string; accountId: string; ip: string }[],
): Promise<Map<string, StoredResult>> {
  const found = new Map<string, StoredResult>();
  if (!wanted.length) return found;
  const pairs = JSON.stringify(wanted.map((w) => ({ key: w.key, account_id: w.accountId, ip: w.ip })));
  const rows = await ctx.db<Row & { key: string }>`
    select q.key, c.result::text as result, (extract(epoch from (c.expires_at - now())) * 1000)::float8 as ttl_ms
    from jsonb_to_recordset(${pairs}::text::jsonb) as q(key text, account_id uuid, ip inet)
    cross join lateral (
      select result, expires_at from ip_cache
      where account_id = q.account_id and operation = ${operation} and ip = q.ip and expires_at > now()
      limit 1
    ) c`;
  for (const r of rows) found.set(r.key, stored(r));
  return found;
}

/**
 * Stores a fresh result in every tier, paid for by `cost` credits (0 for a free answer): the
 * Postgres row and the debit are one transaction (sl_charge_lookup, which raises SL402 when the
 * balance has fallen below the cost meanwhile). A concurrent first lookup of the same address may
 * have stored its result first: that one stands until it expires and this one is not charged
 * (migrations/functions/ip/sl_charge_lookup.sql), so this process and Redis copy the stored row.
 * Answers whether the debit asks for the account's credit auto-reload.
 */
export async function storeResult(
  ctx: CoreDeps,
  tiers: ResultTiers,
  scope: LookupScope & { verdict: Verdict; cost: number },
): Promise<{ reload: boolean }> {
  const [kept] = await sqlCall(
    () => ctx.db<{ result: string; ttl_ms: number; reload: boolean }>`
      select result::text as result, ttl_ms, reload from sl_charge_lookup(${scope.accountId}, ${scope.operation}, ${scope.ip}::inet, ${scope.cost},
                                          ${JSON.stringify(scope.verdict)}::text::jsonb, ${`${RESULT_TTL_SECONDS} seconds`}::interval)`,
  );
  if (!kept) return { reload: false };
  const key = keyOf(scope);
  const result = JSON.parse(kept.result) as Verdict;
  const expiresAt = Date.now() + kept.ttl_ms;
  remember(tiers, key, result, expiresAt);
  const shared: SharedEntry = { expires_at: expiresAt, result };
  await tiers.sharedResults?.set(key, JSON.stringify(shared), Math.ceil(kept.ttl_ms / 1000)).catch(() => undefined);
  return { reload: kept.reload };
}
