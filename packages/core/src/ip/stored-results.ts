import type { CoreDeps } from '../kernel/context.ts';
import type { IpOperation, Verdict } from './resolve-ip.ts';

/** An account's result for an address as Postgres keeps it, with the time it has left in the database's clock. */
export interface StoredResult {
  result: Verdict;
  ttlMs: number;
}

interface Row {
  result: string;
  ttl_ms: number;
}

// The remaining lifetime is worked out by the database (expires_at − now()) and turned into an expiry
// in this process's clock by the caller, so the two clocks never have to agree.
const stored = (r: Row): StoredResult => ({ result: JSON.parse(r.result) as Verdict, ttlMs: r.ttl_ms });

/** The account's unexpired result for one address, or null. */
export async function readStoredResult(ctx: CoreDeps, accountId: string, operation: IpOperation, ip: string): Promise<StoredResult | null> {
  const [row] = await ctx.db<Row>`
    select result::text as result, (extract(epoch from (expires_at - now())) * 1000)::float8 as ttl_ms from ip_cache
    where account_id = ${accountId} and operation = ${operation} and ip = ${ip}::inet and expires_at > now()`;
  return row ? stored(row) : null;
}

/**
 * The unexpired results of many (account, address) pairs in one statement, by the caller's key: the
 * tracker worker reads a whole claim's this way instead of one round trip per visitor. Each pair is
 * its own primary-key probe (the lateral subquery with a LIMIT is never flattened into a join), so
 * the plan stays a handful of index reads however large ip_cache grows.
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
