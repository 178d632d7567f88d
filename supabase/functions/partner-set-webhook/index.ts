import { partnerSetWebhook } from '../../../functions/partner-set-webhook/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerSetWebhook);
