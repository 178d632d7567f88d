import type { Logger } from '../kernel/context.ts';
import type { Sql } from '../kernel/sql.ts';

/**
 * Counts and last-seen facts that requests report many times a second, gathered in memory and
 * written by one statement a moment after the first of a batch, instead of one write per request.
 * Reports of the same key merge, so a hot key costs one row update per flush however often it is
 * hit; and at most one write is in flight, so a database slower than the traffic sees bigger
 * batches, never a growing queue of statements (each holding a pool slot, memory and, for a hot
 * row, its lock).
 *
 * The flush runs as background work, so a Supabase isolate is kept alive for it and the Node host
 * drains it on shutdown. What a process killed outright had not flushed (at most `flushAfterMs` of
 * reports) is lost: use this for reports (usage figures, lookup history), never for a ledger.
 */
export interface WriteBehind<T> {
  add(key: string, item: T): void;
  /** Writes what has been gathered so far (a reader of its own reports calls this first). */
  flush(): Promise<void>;
  /** Keys gathered and not yet written. */
  readonly pending: number;
}

/** Where a write-behind runs: the process's background work, its log, its database for the writer. */
export interface WriteBehindHost {
  db: Sql;
  log: Logger;
  background: (name: string, task: () => Promise<unknown>) => void;
  /** How long reports gather before the write; default 1 s. */
  flushAfterMs?: number;
}

export interface WriteBehindOptions<T> {
  /** Names the background task and the warning when a write fails. */
  name: string;
  /** Folds a report into the one already gathered under its key. */
  merge(into: T, item: T): void;
  /** Writes one batch, every key distinct, in one statement. */
  write(batch: T[]): Promise<unknown>;
  /** The most distinct keys held while the database is away or slow: past it, new keys are dropped. */
  maxPending?: number;
}

/**
 * SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation): the statement's
 * input is wrong, not the database's state, so retrying the same batch cannot succeed.
 */
function refusedForItsData(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

export function createWriteBehind<T>(host: Omit<WriteBehindHost, 'db'>, opts: WriteBehindOptions<T>): WriteBehind<T> {
  const flushAfterMs = host.flushAfterMs ?? 1000;
  const maxPending = opts.maxPending ?? 100_000;
  let pending = new Map<string, T>();
  let scheduled = false;
  let dropped = 0;
  let writing: Promise<void> = Promise.resolve();

  function gather(key: string, item: T): void {
    const cur = pending.get(key);
    if (cur) opts.merge(cur, item);
    else if (pending.size < maxPending) pending.set(key, item);
    else dropped++;
  }

  async function write(): Promise<void> {
    scheduled = false;
    if (dropped) {
      host.log.warn(`${opts.name}: reports dropped while the database was behind`, { dropped });
      dropped = 0;
    }
    if (!pending.size) return;
    const batch = pending;
    pending = new Map();
    try {
      await opts.write([...batch.values()]);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      if (refusedForItsData(err)) {
        // The same batch would be refused again on every flush, and hold back every report that
        // joins it: dropped, loudly. (The writers' SQL skips the rows it knows cannot be stored.)
        host.log.error(`${opts.name}: a batch the database refuses for its data was dropped`, { error, reports: batch.size });
        return;
      }
      // Kept for the next flush rather than lost to a blip; bounded, so an outage cannot grow it
      // forever. Reports gathered meanwhile are newer, so the failed batch folds in under them.
      const newer = pending;
      pending = batch;
      for (const [k, v] of newer) gather(k, v);
      // Not rescheduled from here: the next report schedules the retry, so a database that stays
      // away cannot keep a background task alive (a host draining its work would never finish).
      host.log.warn(`${opts.name}: not written; kept for the next flush`, { error });
    }
  }

  function flush(): Promise<void> {
    writing = writing.then(write);
    return writing;
  }

  return {
    add(key, item) {
      gather(key, item);
      if (scheduled) return;
      scheduled = true;
      host.background(opts.name, () => new Promise<void>((resolve) => setTimeout(resolve, flushAfterMs)).then(flush));
    },
    flush,
    get pending() {
      return pending.size;
    },
  };
}
