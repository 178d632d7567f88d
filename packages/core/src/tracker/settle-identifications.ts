import type { Verdict } from '../ip/types.ts';
import type { CoreDeps } from '../kernel/context.ts';
import { nextTurn } from '../kernel/next-turn.ts';

/** The tracker's results are cached for the account like ip-to-company's: 7 days. */
const CACHE_TTL = '7 days';
/** Settles one statement takes at most: one transaction stays short, its JSON small. */
const MAX_BATCH = 128;

/** What sl_settle_identification answers for one identification. */
export interface Settled {
  outcome: string;
  reload_pool_id: string | null;
  partner_account_id: string | null;
  emitted: boolean;
}

export interface SettleItem {
  id: string;
  /** The tracker key the identification uses an ID of: a batch holds one key's. */
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
 * sl_settle_identification settles it, but the ones of one tracker key that become ready while a
 * settle statement is in flight share the next one (sl_settle_identifications: one transaction).
 * The key's subscription row, which every consumption locks until the commit, is then locked once
 * per batch instead of once per visitor, with one commit and no queue of settles waking on each
 * other's commits. One statement is in flight at a time; a lone settle waits one turn of the event
 * loop.
 *
 * A batch holds one key's identifications only. A consumption locks the key's subscription, then
 * its partner's pool, until the commit: a batch that held two keys of one partner would hold the
 * pool while it waited for the second key's row, which another replica's batch (or a partner
 * action on that key) may hold while it waits for the pool, and Postgres would cancel one of them
 * as a deadlock. One key per batch takes the rows in the order a single consumption does.
 *
 * Within a batch the rows are taken in the database's lock order (visitors, then identifications,
 * then cached lookups, each sorted by Postgres: migration 0030 writes it down), which aggregation
 * follows too; the order the settles arrive in here does not matter.
 *
 * A batch that fails (a row the database refuses) is retried one identification at a time, so
 * each settle gets its own answer or its own error; the refusal is logged.
 */
export function createIdentificationSettler(ctx: CoreDeps): (item: SettleItem) => Promise<Settled> {
  let waiting: Waiting[] = [];
  let running = false;

  async function drain(): Promise<void> {
    running = true;
    try {
      while (waiting.length) {
        // A turn of the event loop first: the lanes whose lookups are answering from memory reach
        // their settle in it and share this statement instead of each starting the next.
        await nextTurn();
        const key = waiting[0]?.apiKeyId;
        const batch = waiting.filter((w) => w.apiKeyId === key).slice(0, MAX_BATCH);
        const taken = new Set(batch);
        waiting = waiting.filter((w) => !taken.has(w));
        await settleBatch(batch);
      }
    } finally {
      running = false;
    }
  }

  async function settleBatch(batch: Waiting[]): Promise<void> {
    if (batch.length > 1) {
      const rows = await settleMany(ctx, batch).catch((err: unknown) => {
        ctx.log.warn('identification settle batch refused; settling one by one', {
          identifications: batch.length,
          error: err instanceof Error ? err.message : String(err),
        });
        return undefined;
      });
      if (rows) {
        for (const [i, w] of batch.entries()) w.resolve(rows[i] as Settled);
        return;
      }
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

/** The answers in the order of `items` (the database settles them in its lock order and answers in that). */
async function settleMany(ctx: CoreDeps, items: SettleItem[]): Promise<Settled[]> {
  const payload = JSON.stringify(items.map((w) => ({ id: w.id, result: w.result, cache: w.cache })));
  const rows = await ctx.db<Settled & { id: string }>`
    select id, outcome, reload_pool_id, partner_account_id, emitted
    from sl_settle_identifications(${payload}::text::jsonb, ${CACHE_TTL}::interval)`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const answers = items.flatMap((w) => byId.get(w.id) ?? []);
  if (rows.length !== items.length || answers.length !== items.length) {
    throw new Error(`sl_settle_identifications answered ${rows.length} rows for ${items.length} identifications`);
  }
  return answers;
}
