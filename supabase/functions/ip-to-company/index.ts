import { ipToCompany } from '../../../functions/ip-to-company/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(ipToCompany);
