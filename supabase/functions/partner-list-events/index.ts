import { partnerListEvents } from '../../../functions/partner-list-events/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerListEvents);
