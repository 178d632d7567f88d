import { partnerReplayEvent } from '../../../functions/partner-replay-event/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerReplayEvent);
