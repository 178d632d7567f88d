import { z } from '@hono/zod-openapi';
import { workTrackerQueue } from '@sightline/core';
import { sweepFunction } from '../_shared/sweep.ts';

export const sweepTrackerEvents = sweepFunction({
  name: 'sweep-tracker-events',
  sweep: 'tracker-events',
  summary: 'Scheduled (every minute): apply waiting tracker events to their visitors, then identify the visitors waiting',
  description:
    'Called by the scheduler (Supabase Cron) with the sweep token; replicas share the work through claims taken with SKIP LOCKED, an event counts once, and an identification uses at most one ID.',
  result: z.object({
    visits: z.object({ applied: z.number().int(), claims: z.number().int() }),
    identifications: z.object({
      identified: z.number().int(),
      failed: z.number().int(),
      dropped: z.number().int(),
      retried: z.number().int(),
      claims: z.number().int(),
    }),
  }),
  resultName: 'TrackerEventsSweepResult',
  usesIpData: true,
  run: (deps) => workTrackerQueue({ ctx: deps, input: {} }),
});
