import type { CoreDeps, VerbArgs } from '../kernel/context.ts';

/** Events one claim takes: small enough that one transaction of aggregation stays short. */
const EVENTS_PER_CLAIM = 500;

export interface AggregationReport {
  /** Events applied to their visitors by this run. */
  applied: number;
  claims: number;
}

/**
 * The tracker worker's first step: every waiting tracker event is applied to its visitor (visits,
 * pages, engaged time, first and last seen, referrer, intent), in bounded claims, each one
 * transaction that locks its events with SKIP LOCKED (`sl_aggregate_tracker_events`), so replicas
 * (and the scheduled function) share the work, an event counts once, and a worker that dies
 * mid-claim leaves its events to the next at once. Runs until a claim comes back short of a full
 * batch (the queue was empty behind it: what arrives later is the next run's), or `maxClaims` claims.
 */
export async function aggregateTrackerEvents({
  ctx,
  input,
}: VerbArgs<{ batchSize?: number; maxClaims?: number }, CoreDeps>): Promise<AggregationReport> {
  const report: AggregationReport = { applied: 0, claims: 0 };
  const batchSize = input.batchSize ?? EVENTS_PER_CLAIM;
  for (let i = 0; i < (input.maxClaims ?? 100); i++) {
    const [row] = await ctx.db<{ applied: number }>`select sl_aggregate_tracker_events(${batchSize}) as applied`;
    const applied = row?.applied ?? 0;
    if (!applied) break;
    report.claims++;
    report.applied += applied;
    // A short claim emptied the queue: under a stream of beacons, chasing each new one with a claim
    // of its own would keep a worker (the sweep's, say) taking tiny claims for as long as the stream lasts.
    if (applied < batchSize) break;
  }
  return report;
}
