import { dataLifecycle } from '../_shared/schedule.ts';
import { sweepFunction } from '../_shared/sweep.ts';

export const sweepDataLifecycle = sweepFunction(dataLifecycle);
