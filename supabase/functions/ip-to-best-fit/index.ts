import { ipToBestFit } from '../../../functions/ip-to-best-fit/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(ipToBestFit);
