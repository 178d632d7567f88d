import { sweepWebhookDeliveriesFunction } from '../../../functions/sweep-webhook-deliveries/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(sweepWebhookDeliveriesFunction);
