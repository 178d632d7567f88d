import { partnerPoolState } from '../../../functions/partner-pool-state/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerPoolState);
