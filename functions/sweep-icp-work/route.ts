import { z } from '@hono/zod-openapi';
import { workIcpQueue } from '@sightline/core';
import { sweepFunction } from '../_shared/sweep.ts';

export const sweepIcpWork = sweepFunction({
  name: 'sweep-icp-work',
  sweep: 'icp-work',
  summary:
    'Scheduled (every minute): draft the ICPs waiting for generation, score identifications against active ICPs, give back the expired credit holds of api-full-request',
  description:
    'Called by the scheduler (Supabase Cron) with the sweep token. Generation retries failed attempts when due and takes over the work of a worker that died; scoring scores the identifications that landed and catches up ICPs activated since. Replicas share both through leased or SKIP LOCKED claims. Credits an api-full-request worker held and never settled or released (it died) go back to the account once the hold expires.',
  result: z.object({
    generation: z.object({
      generated: z.number().int(),
      retrying: z.number().int(),
      failed: z.number().int(),
      claims: z.number().int(),
    }),
    scoring: z.object({
      scored: z.number().int(),
      backfilled: z.number().int(),
      scores: z.number().int(),
      batches: z.number().int(),
    }),
    credit_holds: z.object({ released: z.number().int() }),
  }),
  resultName: 'IcpWorkSweepResult',
  run: (deps) => workIcpQueue({ ctx: deps, input: {} }),
});
