import type { CoreDeps, Logger } from '@sightline/core';
import { periodRollover, SCHEDULE, type Sweep } from '../../../functions/_shared/schedule.ts';

export interface ScheduledJob {
  name: string;
  everyMs: number;
  run(): Promise<unknown>;
}

/**
 * Whether a job's result says it did nothing, whatever the job: every number in it is 0, every list
 * empty, every flag false, at any depth (nothing, too, when it returned nothing). Text says nothing
 * either way, so a result of only names and zeros did nothing.
 */
export function didNothing(result: unknown): boolean {
  if (result === undefined || result === null || result === false || result === 0) return true;
  if (typeof result === 'string') return true;
  if (Array.isArray(result)) return result.length === 0;
  if (typeof result === 'object') return Object.values(result).every(didNothing);
  return false;
}

/**
 * In-process cron for the Node host. A job never overlaps itself; every sweep it runs is safe on
 * several replicas at once (SKIP LOCKED in SQL), so running one scheduler per replica is fine.
 * The first run happens shortly after start so a restarted host catches up at once.
 */
export function startScheduler(jobs: ScheduledJob[], log: Logger, firstRunDelayMs = 5_000): { stop(): Promise<void> } {
  const timers: NodeJS.Timeout[] = [];
  const running = new Map<string, Promise<unknown>>();
  let stopped = false;
  const tick = (job: ScheduledJob) => {
    if (stopped || running.has(job.name)) return;
    const started = Date.now();
    const p = job
      .run()
      .then((result) => {
        // Every few seconds a sweep finds nothing: said at debug, so the log at info speaks only of work done.
        const fields = { job: job.name, ms: Date.now() - started, result };
        if (didNothing(result)) log.debug('scheduled job finished', fields);
        else log.info('scheduled job finished', fields);
      })
      .catch((err: unknown) => log.error('scheduled job failed', { job: job.name, error: err instanceof Error ? err.message : String(err) }))
      .finally(() => running.delete(job.name));
    running.set(job.name, p);
  };
  for (const job of jobs) {
    timers.push(setTimeout(() => tick(job), firstRunDelayMs));
    timers.push(setInterval(() => tick(job), job.everyMs));
  }
  return {
    async stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      await Promise.all(running.values());
    },
  };
}

/**
 * The Node host's jobs: one per sweep of the schedule (functions/_shared/schedule.ts), at the
 * sweep's Node cadence, the period rollover's from ROLLOVER_INTERVAL_SECONDS.
 */
export function scheduledJobs(deps: CoreDeps, opts: { rolloverIntervalSeconds: number }, schedule: readonly Sweep[] = SCHEDULE): ScheduledJob[] {
  const everySeconds: Record<string, number> = { [periodRollover.sweep]: opts.rolloverIntervalSeconds };
  return schedule.map((s) => ({ name: s.sweep, everyMs: (everySeconds[s.sweep] ?? s.nodeEverySeconds) * 1000, run: () => s.run(deps) }));
}
