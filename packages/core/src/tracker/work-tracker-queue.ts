import { coalescedKick } from '../background.ts';
import type { CoreDeps, VerbArgs } from '../context.ts';
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

const kickTracker = coalescedKick('tracker-queue', (ctx) => workTrackerQueue({ ctx, input: { maxClaims: 20 } }));

/** Identifies right after a beacon is stored, unless the host steps the worker itself (trackerKick off). */
export function kickTrackerQueue(ctx: CoreDeps): void {
  if (ctx.trackerKick) kickTracker(ctx);
}
