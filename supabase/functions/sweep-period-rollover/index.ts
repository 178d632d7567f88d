import { rollOverDuePeriods } from '@sightline/core';
import { serveSweep } from '../_shared/host.ts';

// Hourly, from Supabase Cron (see README "Scheduled sweeps").
await serveSweep('period-rollover', (deps) => rollOverDuePeriods({ ctx: deps, input: {} }));
