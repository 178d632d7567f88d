import type { Logger } from './context.ts';

/**
 * The host's runner of work that goes on after the response: after-work (after-work.ts, the one
 * way it is started), the write-behinds' flushes, a request's own work past its wait. Failures are
 * logged, never thrown into a request. `drain` lets a host finish in-flight work before it exits,
 * and `handOff` lets a runtime keep the isolate alive (Supabase: EdgeRuntime.waitUntil).
 */
export interface BackgroundRunner {
  run(name: string, task: () => Promise<unknown>): void;
  drain(): Promise<void>;
}

export function createBackgroundRunner(log: Logger, handOff?: (p: Promise<unknown>) => void): BackgroundRunner {
  const inFlight = new Set<Promise<unknown>>();
  return {
    run(name, task) {
      const p: Promise<unknown> = Promise.resolve()
        .then(task)
        .catch((err: unknown) => {
          log.error('background task failed', { task: name, error: err instanceof Error ? err.message : String(err) });
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
      handOff?.(p);
    },
    async drain() {
      while (inFlight.size) await Promise.all([...inFlight]);
    },
  };
}
