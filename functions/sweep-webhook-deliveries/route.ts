import { z } from '@hono/zod-openapi';
import { sweepWebhookDeliveries } from '@sightline/core';
import { sweepFunction } from '../_shared/sweep.ts';

export const sweepWebhookDeliveriesFunction = sweepFunction({
  name: 'sweep-webhook-deliveries',
  sweep: 'webhook-deliveries',
  summary: 'Scheduled (every minute): send due webhook retries and first attempts a crashed process never sent',
  description: 'Called by the scheduler (Supabase Cron) with the sweep token; replicas share the work through leased claims.',
  result: z.object({ claimed: z.number().int(), delivered: z.number().int(), failed: z.number().int(), released: z.number().int() }),
  resultName: 'DeliverySweepResult',
  run: (deps) => sweepWebhookDeliveries({ ctx: deps, input: {} }),
});
