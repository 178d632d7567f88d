import type { CoreDeps, Logger } from './context.ts';

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

/**
 * A worker started after a request commits, off the request (Node: a tracked promise; Supabase:
 * EdgeRuntime.waitUntil), so its work is done within moments rather than at the next sweep. One
 * run per process at a time: kicks during a run ask for one more run, so a burst of requests costs a
 * few runs, not one each. A run that dies leaves its leased claims to the sweep.
 */
export function coalescedKick(name: string, run: (ctx: CoreDeps) => Promise<unknown>): (ctx: CoreDeps) => void {
  const running = new WeakMap<CoreDeps, { again: boolean }>();
  return (ctx) => {
    const state = running.get(ctx);
    if (state) {
      state.again = true;
      return;
    }
    const mine = { again: false };
    running.set(ctx, mine);
    ctx.background(name, async () => {
      try {
        do {
          mine.again = false;
          await run(ctx);
        } while (mine.again);
      } finally {
        running.delete(ctx);
      }
    });
  };
}
