import { createRoute, z } from '@hono/zod-openapi';
import { type FunctionDefinition, openapi, policies, sweepWebhookDeliveries } from '@sightline/core';

export const DeliverySweepResult = z
  .object({
    success: z.literal(true),
    sweep: z.literal('webhook-deliveries'),
    result: z.object({ claimed: z.number().int(), delivered: z.number().int(), failed: z.number().int(), released: z.number().int() }),
  })
  .openapi('DeliverySweepResult');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Scheduled (every minute): send due webhook retries and first attempts a crashed process never sent',
  description: 'Called by the scheduler (Supabase Cron) with the sweep token; replicas share the work through leased claims.',
  responses: { 200: { description: 'What was sent', content: { 'application/json': { schema: DeliverySweepResult } } } },
});

export const sweepWebhookDeliveriesFunction: FunctionDefinition = {
  name: 'sweep-webhook-deliveries',
  mount: 'functions',
  method: 'POST',
  body: 'none',
  policy: policies.sweep,
  register(app) {
    openapi(app, route, async (c) => {
      const deps = c.get('deps');
      const started = Date.now();
      const result = await sweepWebhookDeliveries({ ctx: deps, input: {} });
      deps.log.info('sweep finished', { sweep: 'webhook-deliveries', ms: Date.now() - started, result });
      return c.json({ success: true as const, sweep: 'webhook-deliveries' as const, result }, 200);
    });
  },
};
