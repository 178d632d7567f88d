import { periodRollover } from '../_shared/schedule.ts';
import { sweepFunction } from '../_shared/sweep.ts';

export const sweepPeriodRollover = sweepFunction(periodRollover);
