import { trackerEvents } from '../_shared/schedule.ts';
import { sweepFunction } from '../_shared/sweep.ts';

export const sweepTrackerEvents = sweepFunction(trackerEvents);
