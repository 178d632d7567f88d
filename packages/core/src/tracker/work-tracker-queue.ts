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

/** Per process: whether a kicked run is under way, and whether another beacon arrived meanwhile. */
const running = new WeakMap<CoreDeps, { again: boolean }>();

/**
 * Starts the tracker worker after a beacon was stored, off the request (Node: a tracked promise;
 * Supabase: EdgeRuntime.waitUntil), so a visit is identified within moments instead of at the next
 * sweep. One run per process at a time: beacons arriving during a run ask for one more run, so a
 * burst costs a few runs, not one per beacon. A run that dies leaves its leased claims to the sweep.
 */
export function kickTrackerQueue(ctx: CoreDeps): void {
  if (!ctx.trackerKick) return;
  const state = running.get(ctx);
  if (state) {
    state.again = true;
    return;
  }
  const mine = { again: false };
  running.set(ctx, mine);
  ctx.background('tracker-queue', async () => {
    try {
      do {
        mine.again = false;
        await workTrackerQueue({ ctx, input: { maxClaims: 20 } });
      } while (mine.again);
    } finally {
      running.delete(ctx);
    }
  });
}
