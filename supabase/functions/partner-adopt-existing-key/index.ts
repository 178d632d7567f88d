import { partnerAdoptExistingKey } from '../../../functions/partner-adopt-existing-key/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerAdoptExistingKey);
