import { z } from '@hono/zod-openapi';
import { aggregateTrackerEvents } from '@sightline/core';
import { sweepFunction } from '../_shared/sweep.ts';

export const sweepTrackerEvents = sweepFunction({
  name: 'sweep-tracker-events',
  sweep: 'tracker-events',
  summary: 'Scheduled (every minute): apply waiting tracker events to their visitors',
  description:
    'Called by the scheduler (Supabase Cron) with the sweep token; replicas share the work through leased claims, and an event counts once.',
  result: z.object({ applied: z.number().int(), claims: z.number().int() }),
  resultName: 'TrackerEventsSweepResult',
  run: (deps) => aggregateTrackerEvents({ ctx: deps, input: {} }),
});
