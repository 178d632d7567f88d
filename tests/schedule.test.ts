import { readFile } from 'node:fs/promises';
import { policies } from '@sightline/core';
import { scheduledJobs } from '@sightline/host';
import { describe, expect, it } from 'vitest';
import { cronSql, SCHEDULE, sweepFunctionName } from '../functions/_shared/schedule.ts';
import { allFunctions } from '../functions/index.ts';
import { envForDatabase } from './support/app.ts';
import { openTestDatabase } from './support/db.ts';

/**
 * One schedule (functions/_shared/schedule.ts) is the only place a sweep and its cadence are
 * written: the Node host's timers, the sweep functions and the cron SQL the deploy guide shows all
 * come from it.
 */
describe('the one schedule', () => {
  it('is the set of sweep functions, each answering only the sweep token', () => {
    const sweepFunctions = allFunctions.filter((f) => f.policy === policies.sweep).map((f) => f.name);
    expect(sweepFunctions.sort()).toEqual(SCHEDULE.map(sweepFunctionName).sort());
    for (const s of SCHEDULE) {
      const def = allFunctions.find((f) => f.name === sweepFunctionName(s));
      expect(def?.usesIpData, s.sweep).toBe(s.usesIpData === true);
    }
  });

  it('gives the Node host one job per sweep, at its cadence, the rollover at ROLLOVER_INTERVAL_SECONDS', async () => {
    const env = await envForDatabase(await openTestDatabase());
    try {
      const jobs = scheduledJobs(env.deps, { rolloverIntervalSeconds: 120 });
      expect(jobs.map((j) => [j.name, j.everyMs])).toEqual(
        SCHEDULE.map((s) => [s.sweep, (s.sweep === 'period-rollover' ? 120 : s.nodeEverySeconds) * 1000]),
      );
      // Each job runs its sweep's verb: on an empty database, a report of nothing done in the sweep's shape.
      for (const [i, job] of jobs.entries()) {
        const sweep = SCHEDULE[i];
        expect(sweep?.result.parse(await job.run()), job.name).toBeDefined();
      }
    } finally {
      await env.close();
    }
  });

  it('is what the deploy guide schedules on Supabase Cron', async () => {
    const guide = await readFile(new URL('../docs/deploy-supabase.md', import.meta.url), 'utf8');
    const section = guide.slice(guide.indexOf('## Scheduled sweeps'));
    const block = /```sql\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block, 'run cronSql and paste it into docs/deploy-supabase.md').toBe(cronSql('https://<project-ref>.supabase.co/functions/v1'));
  });
});
