import { partnerRotateChildKey } from '../../../functions/partner-rotate-child-key/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerRotateChildKey);
