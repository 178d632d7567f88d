import { sweepPeriodRollover } from '../../../functions/sweep-period-rollover/route.ts';
import { serveFunction } from '../_shared/host.ts';

await serveFunction(sweepPeriodRollover);
