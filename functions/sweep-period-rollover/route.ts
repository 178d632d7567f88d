import { z } from '@hono/zod-openapi';
import { purgeIdempotentRequests, rollOverDuePeriods } from '@sightline/core';
import { sweepFunction } from '../_shared/sweep.ts';

export const sweepPeriodRollover = sweepFunction({
  name: 'sweep-period-rollover',
  sweep: 'period-rollover',
  summary: 'Scheduled (hourly): roll over every period whose end has passed, and forget idempotency outcomes past their retention',
  description: 'Called by the scheduler (Supabase Cron) with the sweep token; idempotent, so a second run finds nothing due.',
  result: z.object({ children: z.number().int(), pools: z.number().int(), idempotent_requests: z.number().int() }),
  resultName: 'PeriodRolloverResult',
  run: async (deps) => ({
    ...(await rollOverDuePeriods({ ctx: deps, input: {} })),
    ...(await purgeIdempotentRequests({ ctx: deps, input: {} })),
  }),
});
