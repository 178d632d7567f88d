import { icpWork } from '../_shared/schedule.ts';
import { sweepFunction } from '../_shared/sweep.ts';

export const sweepIcpWork = sweepFunction(icpWork);
