import type { Logger } from './context.ts';

/**
 * Work that runs after the response (webhook dispatch, auto-reload charges). Failures are logged,
 * never thrown into a request. `drain` lets a host finish in-flight work before it exits, and
 * `handOff` lets a runtime keep the isolate alive (Supabase: EdgeRuntime.waitUntil).
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
