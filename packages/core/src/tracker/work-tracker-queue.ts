import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { type AggregationReport, aggregateTrackerEvents } from './aggregate-events.ts';
import { type IdentificationReport, identifyVisitors } from './identify-visitors.ts';

declare module '../kernel/after-work.ts' {
  interface AfterWorkKinds {
    /** The tracker worker (workTrackerQueue), after a beacon was stored: its visit, then its visitor identified. */
    'tracker-queue': undefined;
  }
}

export interface TrackerQueueReport {
  visits: AggregationReport;
  identifications: IdentificationReport;
}

/**
 * The tracker worker: waiting events become visits (which queue identifications), then waiting
 * identifications are settled. What the scheduled sweep runs, and the after-work (`tracker-queue`)
 * each stored beacon starts.
 */
export async function workTrackerQueue({ ctx, input }: VerbArgs<{ maxClaims?: number }, CoreDeps>): Promise<TrackerQueueReport> {
  const visits = await aggregateTrackerEvents({ ctx, input });
  const identifications = await identifyVisitors({ ctx, input });
  return { visits, identifications };
}
