import type { CoreDeps } from '../context.ts';
import type { Verdict } from '../ip/resolve-ip.ts';

/** The tracker's results are cached for the account like ip-to-company's: 7 days. */
const CACHE_TTL = '7 days';
/** Settles one statement takes at most: one transaction stays short, its JSON small. */
const MAX_BATCH = 64;

/** What sl_settle_identification answers for one identification. */
export interface Settled {
  outcome: string;
  reload_pool_id: string | null;
  partner_account_id: string | null;
  emitted: boolean;
}

export interface SettleItem {
  id: string;
  /** The tracker key the identification uses an ID of: batches are sent in key order. */
  apiKeyId: string;
  /** The identification's columns for the verdict (sl_settle_identification reads them by name). */
  result: object;
  /** A fresh lookup, cached for the owner's account; null when the answer came from a cache. */
  cache: Verdict | null;
}

interface Waiting extends SettleItem {
  resolve(s: Settled): void;
  reject(err: unknown): void;
}

/**
 * Group commit for the worker's settles. Each identification is still settled exactly as
 * sl_settle_identification settles it, but the ones that become ready while a settle statement is in
 * flight share the next one (sl_settle_identifications: one transaction). The tracker key's
 * subscription row, which every consumption of the key locks until the commit, is then locked
 * once per batch instead of once per visitor, with one commit and no queue of settles waking on
 * each other's commits. One statement is in flight at a time; a lone settle waits one turn of
 * the event loop, no more.
 *
 * A batch that fails (a row the database refuses, a deadlock with another replica's batch) is
 * retried one identification at a time, so each settle gets its own answer or its own error.
 */
export function createIdentificationSettler(ctx: CoreDeps): (item: SettleItem) => Promise<Settled> {
  let waiting: Waiting[] = [];
  let running = false;

  async function drain(): Promise<void> {
    running = true;
    try {
      while (waiting.length) {
        // One turn of the event loop first: the lanes whose lookups are answering from memory
        // reach their settle in it and share this statement instead of each starting the next.
        await new Promise((r) => setImmediate(r));
        const batch = waiting.slice(0, MAX_BATCH);
        waiting = waiting.slice(MAX_BATCH);
        await settleBatch(batch);
      }
    } finally {
      running = false;
    }
  }

  async function settleBatch(batch: Waiting[]): Promise<void> {
    if (batch.length > 1) {
      // By key, then id: two workers' batches take the keys' rows in the same order.
      batch.sort((a, b) => (a.apiKeyId < b.apiKeyId ? -1 : a.apiKeyId > b.apiKeyId ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const rows = await settleMany(ctx, batch).catch(() => undefined);
      if (rows) {
        for (const [i, w] of batch.entries()) w.resolve(rows[i] as Settled);
        return;
      }
      // Refused as a whole: each alone below, so the one at fault fails on its own.
    }
    for (const w of batch) {
      try {
        w.resolve((await settleMany(ctx, [w]))[0] as Settled);
      } catch (err) {
        w.reject(err);
      }
    }
  }

  return (item) =>
    new Promise<Settled>((resolve, reject) => {
      waiting.push({ ...item, resolve, reject });
      if (!running) void drain();
    });
}

async function settleMany(ctx: CoreDeps, items: SettleItem[]): Promise<Settled[]> {
  const payload = JSON.stringify(items.map((w) => ({ id: w.id, result: w.result, cache: w.cache })));
  const rows = await ctx.db<Settled & { id: string }>`
    select id, outcome, reload_pool_id, partner_account_id, emitted
    from sl_settle_identifications(${payload}::text::jsonb, ${CACHE_TTL}::interval)`;
  if (rows.length !== items.length || rows.some((r, i) => r.id !== items[i]?.id)) {
    throw new Error(`sl_settle_identifications answered ${rows.length} rows for ${items.length} identifications`);
  }
  return rows;
}
