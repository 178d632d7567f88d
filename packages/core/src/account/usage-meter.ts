import type { Logger } from '../context.ts';
import type { Sql } from '../db.ts';

/**
 * Counts an account's API calls and operations for api-usage-summary without a database write on
 * the request path: counts gather in memory and one statement (`sl_record_usage`) adds them, a
 * moment after the first count of a batch. The flush runs as background work, so a Supabase isolate
 * is kept alive for it and the Node host drains it on shutdown. What a process killed outright had
 * not flushed (at most `flushAfterMs` of counts) is lost: usage figures are a report, not a ledger —
 * credits are debited in the same transaction as the work they pay for, never through here.
 */
export interface UsageMeter {
  count(accountId: string, operation: string, calls?: number): void;
  /** Writes what has been counted so far (a reader of its own usage calls this first). */
  flush(): Promise<void>;
}

/** The largest number of distinct (account, operation) pairs held while the database is away. */
const MAX_PENDING = 100_000;

export function createUsageMeter(opts: {
  db: Sql;
  log: Logger;
  background: (name: string, task: () => Promise<unknown>) => void;
  flushAfterMs?: number;
}): UsageMeter {
  const flushAfterMs = opts.flushAfterMs ?? 1000;
  let pending = new Map<string, { account_id: string; operation: string; calls: number }>();
  let scheduled = false;
  let writing: Promise<void> = Promise.resolve();

  async function write(): Promise<void> {
    scheduled = false;
    if (!pending.size) return;
    const batch = pending;
    pending = new Map();
    try {
      await opts.db`select sl_record_usage(${JSON.stringify([...batch.values()])}::text::jsonb)`;
    } catch (err) {
      // Kept for the next flush rather than lost to a blip; bounded, so an outage cannot grow it forever.
      for (const [k, v] of batch) {
        if (pending.size >= MAX_PENDING && !pending.has(k)) break;
        const cur = pending.get(k);
        if (cur) cur.calls += v.calls;
        else pending.set(k, v);
      }
      // Not rescheduled from here: the next count schedules the retry, so a database that stays away
      // cannot keep a background task alive (a host draining its work on shutdown would never finish).
      opts.log.warn('usage counts not written; kept for the next flush', { error: err instanceof Error ? err.message : String(err) });
    }
  }

  function flush(): Promise<void> {
    writing = writing.then(write);
    return writing;
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    opts.background('usage-meter', () => new Promise<void>((resolve) => setTimeout(resolve, flushAfterMs)).then(flush));
  }

  return {
    count(accountId, operation, calls = 1) {
      const k = `${accountId}|${operation}`;
      const cur = pending.get(k);
      if (cur) cur.calls += calls;
      else if (pending.size < MAX_PENDING) pending.set(k, { account_id: accountId, operation, calls });
      schedule();
    },
    flush,
  };
}
