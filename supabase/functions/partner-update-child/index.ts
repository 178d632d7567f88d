import { partnerUpdateChild } from '../../../functions/partner-update-child/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerUpdateChild);
