import type { VerbArgs } from '../kernel/context.ts';

/**
 * How long a completed outcome answers repeats of its key (the spec leaves retention open). A
 * client retries within minutes or hours; thirty days also covers a job queue replaying a backlog
 * after an outage. The work itself (a message, an ICP) is kept regardless.
 */
export const IDEMPOTENCY_RETENTION_DAYS = 30;

/**
 * The hourly housekeeping of the idempotency store: outcomes older than the retention go, in
 * bounded batches so one sweep never holds a long lock, and so do keys a crashed worker left
 * processing that nobody repeated (their lease long over); a key whose work still holds its lease stays.
 */
export async function purgeIdempotentRequests({
  ctx,
  input,
}: VerbArgs<{ now?: Date; batchSize?: number }>): Promise<{ idempotent_requests: number }> {
  const before = new Date((input.now ?? new Date()).getTime() - IDEMPOTENCY_RETENTION_DAYS * 86_400_000).toISOString();
  const batch = input.batchSize ?? 1000;
  let purged = 0;
  for (;;) {
    const [r] = await ctx.db<{ n: number }>`
      with gone as (
        delete from idempotent_requests where ctid in (
          select ctid from idempotent_requests
          where created_at < ${before}::timestamptz and (state = 'completed' or lease_until < now())
          limit ${batch}
          for update skip locked)
        returning 1)
      select count(*)::int as n from gone`;
    purged += r?.n ?? 0;
    if ((r?.n ?? 0) < batch) break;
  }
  return { idempotent_requests: purged };
}
