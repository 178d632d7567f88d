import { coalescedKick } from '../kernel/background.ts';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { type AggregationReport, aggregateTrackerEvents } from './aggregate-events.ts';
import { type IdentificationReport, identifyVisitors } from './identify-visitors.ts';

export interface TrackerQueueReport {
  visits: AggregationReport;
  identifications: IdentificationReport;
}

/**
 * The tracker worker: waiting events become visits (which queue identifications), then waiting
 * identifications are settled. What the scheduled sweep and the kick after each beacon both run.
 */
export async function workTrackerQueue({ ctx, input }: VerbArgs<{ maxClaims?: number }, CoreDeps>): Promise<TrackerQueueReport> {
  const visits = await aggregateTrackerEvents({ ctx, input });
  const identifications = await identifyVisitors({ ctx, input });
  return { visits, identifications };
}

/**
 * Under a stream of beacons the worker runs at most every 100 ms: each run's claims then carry the
 * beacons of 100 ms (a few hundred at 3,000 a second) instead of the handful that arrived during
 * the last run, so aggregation spends its statements and commits on batches, and the appends'
 * commits queue behind fewer of the worker's. A visitor is identified at most that much later.
 */
const KICK_INTERVAL_MS = 100;

const kickTracker = coalescedKick('tracker-queue', (ctx) => workTrackerQueue({ ctx, input: { maxClaims: 20 } }), {
  minIntervalMs: KICK_INTERVAL_MS,
});

/** Identifies right after a beacon is stored, unless the host steps the worker itself (trackerKick off). */
export function kickTrackerQueue(ctx: CoreDeps): void {
  if (ctx.trackerKick) kickTracker(ctx);
}
