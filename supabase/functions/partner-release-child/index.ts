import { partnerReleaseChild } from '../../../functions/partner-release-child/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerReleaseChild);
