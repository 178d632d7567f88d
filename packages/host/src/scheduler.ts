import type { Logger } from '@sightline/core';

export interface ScheduledJob {
  name: string;
  everyMs: number;
  run(): Promise<unknown>;
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
      .then((result) => log.info('scheduled job finished', { job: job.name, ms: Date.now() - started, result }))
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
