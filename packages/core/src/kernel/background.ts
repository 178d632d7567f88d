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
 *
 * `minIntervalMs` spaces the runs a steady stream of kicks asks for: the next one starts no sooner
 * than that after the last one started. A lone kick still runs at once; under load the work that
 * arrives meanwhile is taken in one larger run instead of many small ones, each with its own
 * statements and commit.
 */
export function coalescedKick(
  name: string,
  run: (ctx: CoreDeps) => Promise<unknown>,
  opts: { minIntervalMs?: number } = {},
): (ctx: CoreDeps) => void {
  const spacing = opts.minIntervalMs ?? 0;
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
        for (;;) {
          mine.again = false;
          const started = Date.now();
          await run(ctx);
          if (!mine.again) break;
          const wait = spacing - (Date.now() - started);
          if (wait > 0) await new Promise((resume) => setTimeout(resume, wait));
        }
      } finally {
        running.delete(ctx);
      }
    });
  };
}
