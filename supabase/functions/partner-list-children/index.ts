import { partnerListChildren } from '../../../functions/partner-list-children/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerListChildren);
