import { webhookDeliveries } from '../_shared/schedule.ts';
import { sweepFunction } from '../_shared/sweep.ts';

export const sweepWebhookDeliveriesFunction = sweepFunction(webhookDeliveries);
