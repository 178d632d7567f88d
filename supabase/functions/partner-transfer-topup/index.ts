import { partnerTransferTopup } from '../../../functions/partner-transfer-topup/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(partnerTransferTopup);
