import { runCreditReload } from '../account/run-credit-reload.ts';
import { generateIcps } from '../icp/generate-icps.ts';
import { scoreIdentifications } from '../icp/score-identifications.ts';
import type { AfterWorkTable } from '../kernel/after-work.ts';
import { runAutoReload } from '../ledger/run-auto-reload.ts';
import { workTrackerQueue } from '../tracker/work-tracker-queue.ts';
import { dispatchNewEvents } from '../webhooks/delivery.ts';

/**
 * Under a stream of beacons the tracker worker runs at most every 100 ms: each run's claims then
 * carry the beacons of 100 ms (a few hundred at 3,000 a second) instead of the handful that arrived
 * during the last run, so aggregation spends its statements and commits on batches, and the
 * appends' commits queue behind fewer of the worker's. A visitor is identified at most that much
 * later.
 */
export const TRACKER_WORKER_INTERVAL_MS = 100;

/**
 * Every kind of after-work, what it runs and how its starts coalesce (kernel/after-work.ts: started
 * only by `startAfterWork`). Each run is bounded; what it leaves, and what a lost start never did,
 * is the sweeps' (functions/_shared/schedule.ts), which run the same verbs.
 */
export const AFTER_WORK: AfterWorkTable = {
  // Each start its own run: the claim is per partner, so a run that finds nothing costs one statement.
  'webhook-delivery': { run: (ctx, input) => dispatchNewEvents({ ctx, input }), coalesce: 'each' },
  // One reload in flight per pool or account is the SQL claim's rule (sl_claim_reload, sl_after_balance_change).
  'auto-reload': { run: (ctx, input) => runAutoReload({ ctx, input }), coalesce: 'each' },
  'credit-reload': { run: (ctx, input) => runCreditReload({ ctx, input }), coalesce: 'each' },
  'tracker-queue': {
    run: (ctx) => workTrackerQueue({ ctx, input: { maxClaims: 20 } }),
    coalesce: { minIntervalMs: TRACKER_WORKER_INTERVAL_MS },
    // A host that steps the worker itself (tests, benches) turns the start after each beacon off.
    startsIf: (ctx) => ctx.trackerKick,
  },
  'icp-generation': { run: (ctx) => generateIcps({ ctx, input: { maxClaims: 5 } }), coalesce: { minIntervalMs: 0 } },
  'icp-scoring': { run: (ctx) => scoreIdentifications({ ctx, input: { maxBatches: 10 } }), coalesce: { minIntervalMs: 0 } },
};
