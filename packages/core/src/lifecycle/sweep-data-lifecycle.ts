import { purgeIdempotentRequests } from '../account/purge-idempotent-requests.ts';
import type { VerbArgs } from '../kernel/context.ts';
import { DEFAULT_RETENTION } from './settings.ts';

/** Weekly partitions of tracker_events made ahead of time, so collect never writes to the default partition. */
export const TRACKER_PARTITION_WEEKS_AHEAD = 4;
const DAY_MS = 86_400_000;

export interface DataLifecycleReport {
  tracker_events: { partitions_made: number; partitions_dropped: number; default_rows: number };
  /** Sessions ended: opened before the tracker events' retention (0037). */
  visitor_sessions: number;
  events: number;
  ip_cache: number;
  connect_links: number;
  idempotent_requests: number;
  aged: {
    visitors: number;
    visitor_sessions: number;
    identifications: number;
    individuals: number;
    search_labels: number;
    api_lookups: number;
    credit_transactions: number;
  };
}

/** The start of the UTC day `ms` falls in, as YYYY-MM-DD. */
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** `now` less `months` calendar months (UTC), the day clamped as Postgres' interval arithmetic does. */
export function monthsBefore(now: Date, months: number): Date {
  const d = new Date(now.getTime());
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() - months);
  const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(day, last));
  return d;
}

/**
 * Deletes `batch` rows at a time with the given statement (which reports how many it removed) until
 * a batch comes back short: each batch is its own short transaction, claimed with SKIP LOCKED, so a
 * sweep never holds a long lock and replicas sweeping at once share the rows.
 */
async function inBatches(batch: number, step: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await step();
    total += n;
    if (n < batch) return total;
  }
}

/**
 * The data lifecycle, run from the one schedule (functions/_shared/schedule.ts, `data-lifecycle`):
 * 1. tracker_events' weekly partitions are made ahead, and those wholly older than the retention
 *    are dropped (a drop costs the same at any size); visitors' sessions opened before the same
 *    retention end (0037), in bounded batches;
 * 2. webhook events (with their attempts) ended before their retention, expired cached lookups,
 *    connect links used or expired before theirs, and idempotency outcomes past theirs are deleted
 *    in bounded batches;
 * 3. addresses and people of visitors not seen for the personal-data period are removed
 *    (sl_age_personal_data), in bounded batches.
 * Idempotent: a second run finds nothing due.
 */
export async function sweepDataLifecycle({ ctx, input }: VerbArgs<{ now?: Date; batchSize?: number }>): Promise<DataLifecycleReport> {
  const retention = ctx.retention ?? DEFAULT_RETENTION;
  const now = input.now ?? new Date();
  const batch = input.batchSize ?? 1000;
  const nowIso = now.toISOString();

  const [made] = await ctx.db<{ n: number }>`
    select sl_ensure_tracker_event_partitions(${nowIso}::timestamptz, ${nowIso}::timestamptz, ${TRACKER_PARTITION_WEEKS_AHEAD}) as n`;
  // The first UTC day the raw events' retention keeps: earlier weeks are dropped, and sessions opened
  // before it end (0037): a page view of one after that opens a new visit.
  const rawBefore = utcDay(now.getTime() - retention.trackerEventDays * DAY_MS);
  const [dropped] = await ctx.db<{ partitions: number; default_rows: number }>`
    select partitions, default_rows from sl_drop_tracker_event_partitions(${rawBefore}::date)`;

  const visitorSessions = await inBatches(batch, async () => {
    const [r] = await ctx.db<{ n: number }>`
      with gone as (
        delete from visitor_sessions where ctid in (
          select ctid from visitor_sessions where opened_on < ${rawBefore}::date limit ${batch} for update skip locked)
        returning 1)
      select count(*)::int as n from gone`;
    return r?.n ?? 0;
  });

  const eventsBefore = new Date(now.getTime() - retention.webhookEventDays * DAY_MS).toISOString();
  const events = await inBatches(batch, async () => {
    const [r] = await ctx.db<{ n: number }>`
      with gone as (
        delete from events where id in (
          select id from events
          where delivery_status <> 'pending' and coalesce(delivered_at, last_attempt_at, created_at) < ${eventsBefore}::timestamptz
          limit ${batch} for update skip locked)
        returning 1)
      select count(*)::int as n from gone`;
    return r?.n ?? 0;
  });
  const ipCache = await inBatches(batch, async () => {
    const [r] = await ctx.db<{ n: number }>`
      with gone as (
        delete from ip_cache where ctid in (
          select ctid from ip_cache where expires_at < ${nowIso}::timestamptz limit ${batch} for update skip locked)
        returning 1)
      select count(*)::int as n from gone`;
    return r?.n ?? 0;
  });
  const linksBefore = new Date(now.getTime() - retention.connectLinkDays * DAY_MS).toISOString();
  const connectLinks = await inBatches(batch, async () => {
    const [r] = await ctx.db<{ n: number }>`
      with gone as (
        delete from connect_links where id in (
          select id from connect_links where coalesce(used_at, expires_at) < ${linksBefore}::timestamptz limit ${batch} for update skip locked)
        returning 1)
      select count(*)::int as n from gone`;
    return r?.n ?? 0;
  });
  const { idempotent_requests } = await purgeIdempotentRequests({ ctx, input: { now, batchSize: batch } });

  const agedBefore = monthsBefore(now, retention.personalDataMonths).toISOString();
  const aged: DataLifecycleReport['aged'] = {
    visitors: 0,
    visitor_sessions: 0,
    identifications: 0,
    individuals: 0,
    search_labels: 0,
    api_lookups: 0,
    credit_transactions: 0,
  };
  for (;;) {
    const [r] = await ctx.db<{ aged: string }>`select sl_age_personal_data(${agedBefore}::timestamptz, ${batch})::text as aged`;
    const step = JSON.parse(r?.aged ?? '{}') as DataLifecycleReport['aged'];
    for (const k of Object.keys(aged) as (keyof typeof aged)[]) aged[k] += step[k];
    // A table whose batch came back full may have more; the others are done and read nothing more.
    if (step.visitors < batch && step.identifications < batch && step.api_lookups < batch && step.credit_transactions < batch) break;
  }

  return {
    tracker_events: { partitions_made: made?.n ?? 0, partitions_dropped: dropped?.partitions ?? 0, default_rows: dropped?.default_rows ?? 0 },
    visitor_sessions: visitorSessions,
    events,
    ip_cache: ipCache,
    connect_links: connectLinks,
    idempotent_requests,
    aged,
  };
}
