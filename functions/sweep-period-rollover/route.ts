import { createRoute, z } from '@hono/zod-openapi';
import { type FunctionDefinition, openapi, policies, rollOverDuePeriods } from '@sightline/core';

export const RolloverResult = z
  .object({
    success: z.literal(true),
    sweep: z.literal('period-rollover'),
    result: z.object({ children: z.number().int(), pools: z.number().int() }),
  })
  .openapi('PeriodRolloverResult');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Scheduled (hourly): roll over every period whose end has passed',
  description: 'Called by the scheduler (Supabase Cron) with the sweep token; idempotent, so a second run finds nothing due.',
  responses: { 200: { description: 'What was rolled over', content: { 'application/json': { schema: RolloverResult } } } },
});

export const sweepPeriodRollover: FunctionDefinition = {
  name: 'sweep-period-rollover',
  mount: 'functions',
  method: 'POST',
  body: 'none',
  policy: policies.sweep,
  register(app) {
    openapi(app, route, async (c) => {
      const deps = c.get('deps');
      const started = Date.now();
      const result = await rollOverDuePeriods({ ctx: deps, input: {} });
      deps.log.info('sweep finished', { sweep: 'period-rollover', ms: Date.now() - started, result });
      return c.json({ success: true as const, sweep: 'period-rollover' as const, result }, 200);
    });
  },
};
