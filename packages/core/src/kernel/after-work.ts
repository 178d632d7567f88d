import type { CoreDeps } from './context.ts';

/**
 * After-work: what a verb or a route starts once its own work has committed, to run off the
 * request (webhook delivery, a reload's charge, the tracker worker, ICP generation and scoring), so
 * its effect arrives within moments rather than at the next sweep. There is one way to start it,
 * `startAfterWork(ctx, kind, input)`; what each kind runs, and whether its starts coalesce, is one
 * table (compose/after-work.ts). The sweeps (functions/_shared/schedule.ts) run the same verbs on a
 * cadence: after-work that is lost (a process that dies, an isolate that ends) is theirs, so nothing
 * started here needs to be durable.
 *
 * Starting never waits for the work and never fails the caller: it runs on the host's background
 * runner (`ctx.background`: a tracked promise on Node, which a host drains before it exits;
 * EdgeRuntime.waitUntil on Supabase), which logs a failure. Start only after the commit whose
 * effect the work acts on (the events outbox row, the claimed reload, the queued beacon): the work
 * reads the database, not the caller's memory.
 *
 * Each domain names its kinds and their input beside the verb that runs them, by augmenting
 * `AfterWorkKinds` (`declare module '../kernel/after-work.ts'`), so the kernel imports no domain
 * and the table is type-checked to have a row for every kind.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by the domains' module augmentations.
export interface AfterWorkKinds {}

export type AfterWorkKind = keyof AfterWorkKinds;

/**
 * How the starts of a kind become runs.
 * - `'each'`: every start is one run with its input. For work claimed in SQL per account or pool
 *   (deliveries, reloads): a run that finds its claim taken costs one statement.
 * - `{ minIntervalMs }`: one run per kind and per dependencies object at a time; starts during a
 *   run ask for one more run, so a burst of requests costs a few runs, not one each. Consecutive
 *   runs start at least `minIntervalMs` apart (start to start): a lone start runs at once, and
 *   under a stream of starts what arrives meanwhile is taken in one larger run. Only for kinds
 *   without input, whose run claims whatever is waiting (a run that dies leaves its leased claims
 *   to the sweep).
 */
export type AfterWorkCoalescing = 'each' | { minIntervalMs: number };

/** One kind's row of the table: the verb it runs and how its starts coalesce. */
export type AfterWorkPolicy<I> = {
  run(ctx: CoreDeps, input: I): Promise<unknown>;
  /** When it is false the start does nothing (the tracker worker, when the host steps it itself). */
  startsIf?(ctx: CoreDeps): boolean;
} & ([I] extends [undefined] ? { coalesce: AfterWorkCoalescing } : { coalesce: 'each' });

/** A row as the starter reads it, whatever its kind. */
interface AnyRow {
  run(ctx: CoreDeps, input: unknown): Promise<unknown>;
  startsIf?(ctx: CoreDeps): boolean;
  coalesce: AfterWorkCoalescing;
}

/** The table: a row for each kind. */
export type AfterWorkTable<Kinds = AfterWorkKinds> = { [K in keyof Kinds]: AfterWorkPolicy<Kinds[K]> };

/** What starts after-work by the table (CoreDeps' `afterWork`, built by the composition). */
export interface AfterWork<Kinds = AfterWorkKinds> {
  start<K extends keyof Kinds & string>(ctx: CoreDeps, kind: K, input: Kinds[K]): void;
}

declare module './context.ts' {
  interface CoreDeps {
    /** Starts after-work by its kind (kernel/after-work.ts); verbs call `startAfterWork`, not this. */
    afterWork: AfterWork;
  }
}

/** A kind's input, or nothing for a kind that takes none. */
export type AfterWorkInput<K extends AfterWorkKind> = [AfterWorkKinds[K]] extends [undefined] ? [] : [input: AfterWorkKinds[K]];

/**
 * Starts after-work of `kind` (the table in compose/after-work.ts says what it runs and how starts
 * coalesce). Call it after the commit the work acts on; it returns at once and never throws.
 */
export function startAfterWork<K extends AfterWorkKind>(ctx: CoreDeps, kind: K, ...input: AfterWorkInput<K>): void {
  ctx.afterWork.start(ctx, kind, input[0] as AfterWorkKinds[K]);
}

/**
 * The starter for a table. Coalescing state is kept per dependencies object (a process's one
 * composition in production), so two compositions in one process, as tests and benches build,
 * run their workers apart.
 */
export function createAfterWork<Kinds>(table: AfterWorkTable<Kinds>): AfterWork<Kinds> {
  const running = new Map<keyof Kinds, WeakMap<CoreDeps, { again: boolean }>>();
  return {
    start(ctx, kind, input) {
      // Read as any row: the table's type has already tied each kind's coalescing to its input.
      const policy = table[kind] as unknown as AnyRow;
      if (policy.startsIf && !policy.startsIf(ctx)) return;
      const coalesce = policy.coalesce;
      if (coalesce === 'each') {
        ctx.background(kind, () => policy.run(ctx, input));
        return;
      }
      const states = running.get(kind) ?? new WeakMap<CoreDeps, { again: boolean }>();
      running.set(kind, states);
      const state = states.get(ctx);
      if (state) {
        state.again = true;
        return;
      }
      const mine = { again: false };
      states.set(ctx, mine);
      ctx.background(kind, async () => {
        try {
          for (;;) {
            mine.again = false;
            const started = Date.now();
            await policy.run(ctx, input);
            if (!mine.again) break;
            const wait = coalesce.minIntervalMs - (Date.now() - started);
            if (wait > 0) await new Promise((resume) => setTimeout(resume, wait));
          }
        } finally {
          states.delete(ctx);
        }
      });
    },
  };
}
