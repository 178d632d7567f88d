import type { CoreDeps } from '../kernel/context.ts';

/** One beacon as `sl_collect_events` takes it (collect-event.ts builds it from the request). */
export interface TrackerEventRow {
  tracking_script_id: string;
  kind: 'pageview' | 'engagement';
  page_host: string;
  /** The host of the browser's Origin (or Referer), which must pass the page host's rule too; absent when it sent neither. */
  origin_host?: string | null;
  ip: string;
  is_bot: boolean;
  session_id: string;
  url: string;
  referrer: string | null;
  active_ms: number | null;
  beacon_id: string | null;
  user_agent: string | null;
}

interface Waiting {
  row: TrackerEventRow;
  resolve(stored: boolean): void;
  reject(error: unknown): void;
}

/**
 * Statements in flight at once. Two, so one batch commits while the next one fills; more would take
 * pool connections from every other endpoint for no gain (each batch is one commit either way).
 */
const IN_FLIGHT = 2;
/** A burst larger than this is split, so one statement stays short and its JSON small. */
const MAX_BATCH = 500;

/**
 * Group commit for beacons. Each collect request still answers only after its own event is
 * committed (a crash loses nothing that got a 202), but the events that arrive while a statement
 * is in flight wait for the next one and share it: one statement, one transaction, one WAL flush
 * for the lot. Alone, an event goes at once, so a quiet site waits for nothing; under load the
 * batches grow with the load, which is what lets collect outrun one commit per beacon.
 */
class EventAppender {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;

  constructor(private readonly ctx: CoreDeps) {}

  append(row: TrackerEventRow): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ row, resolve, reject });
      if (this.inFlight < IN_FLIGHT) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    const batch = this.waiting.splice(0, MAX_BATCH);
    if (batch.length === 0) return;
    this.inFlight++;
    try {
      await this.store(batch);
    } finally {
      this.inFlight--;
      if (this.waiting.length > 0) void this.flush();
    }
  }

  /** One statement for the batch; if it fails, each event alone, so one bad row fails only itself. */
  private async store(batch: Waiting[]): Promise<void> {
    try {
      const stored = await insertEvents(
        this.ctx,
        batch.map((w) => w.row),
      );
      for (const [i, w] of batch.entries()) w.resolve(stored[i] ?? false);
    } catch (error) {
      if (batch.length === 1) {
        batch[0]?.reject(error);
        return;
      }
      for (const w of batch) {
        await insertEvents(this.ctx, [w.row]).then(
          ([stored]) => w.resolve(stored ?? false),
          (e: unknown) => w.reject(e),
        );
      }
    }
  }
}

/**
 * The batch's events through `sl_collect_events`, in one statement (so one transaction), which
 * inserts them in key order (two batches that carry the same engagement beacons take their
 * unique-index locks in the same order and cannot deadlock). Returns, per row as given, whether it
 * was stored.
 */
async function insertEvents(ctx: CoreDeps, rows: TrackerEventRow[]): Promise<boolean[]> {
  // Each row carries its place in `rows` (n) through the statement.
  const result = await ctx.db<{ n: number; stored: boolean }>`
    select n, stored from sl_collect_events(${JSON.stringify(rows.map((row, n) => ({ ...row, n })))}::text::jsonb)`;
  const stored: boolean[] = new Array(rows.length).fill(false);
  for (const r of result) stored[r.n] = r.stored;
  return stored;
}

const appenders = new WeakMap<CoreDeps, EventAppender>();

/** Appends one beacon through the process's group commit; resolves once it is committed. */
export function appendTrackerEvent(ctx: CoreDeps, row: TrackerEventRow): Promise<boolean> {
  let appender = appenders.get(ctx);
  if (!appender) {
    appender = new EventAppender(ctx);
    appenders.set(ctx, appender);
  }
  return appender.append(row);
}
