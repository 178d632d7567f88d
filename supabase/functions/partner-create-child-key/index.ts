import { partnerCreateChildKey } from '../../../functions/partner-create-child-key/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerCreateChildKey);
