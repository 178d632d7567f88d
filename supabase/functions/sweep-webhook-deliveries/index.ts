import { sweepWebhookDeliveries } from '@sightline/core';
import { serveSweep } from '../_shared/host.ts';

// Every minute, from Supabase Cron (see README "Scheduled sweeps").
await serveSweep('webhook-deliveries', (deps) => sweepWebhookDeliveries({ ctx: deps, input: {} }));
