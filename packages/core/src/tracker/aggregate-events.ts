import type { CoreDeps, VerbArgs } from '../context.ts';

/** Events one claim takes: small enough that one transaction of aggregation stays short. */
const EVENTS_PER_CLAIM = 500;
/** Far longer than applying a claim takes; a worker that dies leaves its claim to the next after this. */
const LEASE_MS = 60_000;

export interface AggregationReport {
  /** Events applied to their visitors by this run. */
  applied: number;
  claims: number;
}

/**
 * The tracker worker's first step: every waiting tracker event is applied to its visitor (visits,
 * pages, engaged time, first and last seen, referrer, intent), in bounded claims leased with SKIP
 * LOCKED, so replicas (and the scheduled function) share the work and an event counts once
 * (`sl_apply_tracker_events`). Runs until nothing waits, or `maxClaims` claims.
 */
export async function aggregateTrackerEvents({
  ctx,
  input,
}: VerbArgs<{ batchSize?: number; maxClaims?: number; leaseMs?: number }, CoreDeps>): Promise<AggregationReport> {
  const report: AggregationReport = { applied: 0, claims: 0 };
  for (let i = 0; i < (input.maxClaims ?? 100); i++) {
    const claimed = await ctx.db<{ id: string }>`
      select id::text as id from sl_claim_tracker_events(${input.batchSize ?? EVENTS_PER_CLAIM}, ${input.leaseMs ?? LEASE_MS})`;
    if (!claimed.length) break;
    report.claims++;
    const ids = `{${claimed.map((r) => r.id).join(',')}}`;
    const [row] = await ctx.db<{ applied: number }>`select sl_apply_tracker_events(${ids}::bigint[]) as applied`;
    report.applied += row?.applied ?? 0;
  }
  return report;
}
