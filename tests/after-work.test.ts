import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { AFTER_WORK, type AfterWorkTable, type CoreDeps, createAfterWork, createBackgroundRunner, TRACKER_WORKER_INTERVAL_MS } from '@sightline/core';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/process.ts';
import { sleep } from './support/wait.ts';

/**
 * After-work is started one way (kernel/after-work.ts): `startAfterWork(ctx, kind, input)`, by the
 * table of kinds (compose/after-work.ts). Coalesced kinds run one at a time per dependencies object,
 * starts during a run asking for one more, and (for the tracker) runs under a stream of starts
 * spaced out so each takes a batch. Timed with the real clock against generous bounds: what is
 * checked is order and spacing, not speed.
 */
interface TestKinds {
  worker: undefined;
  delivery: { partner: string };
}

function harness(opts: { minIntervalMs?: number; runMs?: number; startsIf?: () => boolean; fail?: boolean } = {}) {
  const failures: unknown[] = [];
  const runner = createBackgroundRunner({ debug() {}, info() {}, warn() {}, error: (_msg, fields) => failures.push(fields) });
  const ctx = { background: (name: string, task: () => Promise<unknown>) => runner.run(name, task) } as unknown as CoreDeps;
  const starts: number[] = [];
  const delivered: string[] = [];
  let running = 0;
  let overlapped = false;
  const table: AfterWorkTable<TestKinds> = {
    worker: {
      run: async () => {
        if (running++) overlapped = true;
        starts.push(performance.now());
        await sleep(opts.runMs ?? 20);
        running--;
        if (opts.fail) throw new Error('the worker failed');
      },
      coalesce: { minIntervalMs: opts.minIntervalMs ?? 0 },
      ...(opts.startsIf ? { startsIf: opts.startsIf } : {}),
    },
    delivery: {
      run: async (_ctx, input) => {
        await sleep(5);
        delivered.push(input.partner);
      },
      coalesce: 'each',
    },
  };
  const afterWork = createAfterWork(table);
  return {
    start: (on: CoreDeps = ctx) => afterWork.start(on, 'worker', undefined),
    deliver: (partner: string) => afterWork.start(ctx, 'delivery', { partner }),
    ctx,
    starts,
    delivered,
    failures,
    drain: () => runner.drain(),
    overlapped: () => overlapped,
  };
}

describe('after-work, started by its kind', () => {
  it('runs a lone start at once, and starts during a run as one more run, never two at a time', async () => {
    const h = harness();
    const t0 = performance.now();
    h.start();
    // Starts before the run has begun are its own work; these come once it has.
    await sleep(5);
    for (let i = 0; i < 10; i++) h.start();
    await h.drain();
    expect(h.starts).toHaveLength(2);
    expect((h.starts[0] as number) - t0).toBeLessThan(50);
    expect(h.overlapped()).toBe(false);
  });

  it('spaces the runs a stream of starts asks for by minIntervalMs, start to start', async () => {
    const h = harness({ minIntervalMs: 150, runMs: 10 });
    const t0 = performance.now();
    h.start();
    // A stream of starts for about 400 ms: without spacing each 10 ms run would be followed by another.
    const until = t0 + 400;
    while (performance.now() < until) {
      h.start();
      await sleep(5);
    }
    await h.drain();
    expect((h.starts[0] as number) - t0).toBeLessThan(50);
    const gaps = h.starts.slice(1).map((s, i) => s - (h.starts[i] as number));
    expect(gaps.length).toBeGreaterThanOrEqual(2);
    expect(gaps.length).toBeLessThanOrEqual(4);
    for (const g of gaps) expect(g).toBeGreaterThanOrEqual(145);
    expect(h.overlapped()).toBe(false);
  });

  it('starts the next run at once when a run took longer than the interval', async () => {
    // Spaced from the end of a run instead of its start, the second would start at 160 ms.
    const h = harness({ minIntervalMs: 100, runMs: 60 });
    h.start();
    await sleep(5);
    h.start();
    await h.drain();
    expect(h.starts).toHaveLength(2);
    const gap = (h.starts[1] as number) - (h.starts[0] as number);
    expect(gap).toBeGreaterThanOrEqual(59);
    expect(gap).toBeLessThan(140);
  });

  it('coalesces per dependencies object: another composition runs its own worker', async () => {
    const h = harness({ runMs: 30 });
    const other = { ...h.ctx } as CoreDeps;
    h.start();
    h.start(other);
    await h.drain();
    expect(h.starts).toHaveLength(2);
    expect(h.overlapped()).toBe(true);
  });

  it('runs each start of a kind that does not coalesce, with its own input', async () => {
    const h = harness();
    for (const partner of ['a', 'b', 'a']) h.deliver(partner);
    await h.drain();
    expect(h.delivered.sort()).toEqual(['a', 'a', 'b']);
  });

  it('does nothing when its condition is off (a host stepping the worker itself)', async () => {
    const h = harness({ startsIf: () => false });
    h.start();
    await h.drain();
    expect(h.starts).toEqual([]);
  });

  it('a failing run is logged, never thrown at the starter, and the next start runs again', async () => {
    const h = harness({ fail: true });
    expect(() => h.start()).not.toThrow();
    await h.drain();
    h.start();
    await h.drain();
    expect(h.starts).toHaveLength(2);
    expect(h.failures).toEqual([
      { task: 'worker', error: 'the worker failed' },
      { task: 'worker', error: 'the worker failed' },
    ]);
  });
});

describe('the table of after-work', () => {
  it('coalesces the workers that claim whatever waits, and runs each start of the per-account work', () => {
    const coalescing = Object.fromEntries(Object.entries(AFTER_WORK).map(([kind, row]) => [kind, row.coalesce]));
    expect(coalescing).toEqual({
      'webhook-delivery': 'each',
      'auto-reload': 'each',
      'credit-reload': 'each',
      'tracker-queue': { minIntervalMs: TRACKER_WORKER_INTERVAL_MS },
      'icp-generation': { minIntervalMs: 0 },
      'icp-scoring': { minIntervalMs: 0 },
    });
    const tracker = AFTER_WORK['tracker-queue'];
    expect(tracker.startsIf?.({ trackerKick: false } as CoreDeps)).toBe(false);
    expect(tracker.startsIf?.({ trackerKick: true } as CoreDeps)).toBe(true);
  });

  /** Source files under `dir` (relative to the repository), recursively. */
  function sources(dir: string): string[] {
    return readdirSync(`${REPO_ROOT}${dir}`).flatMap((name) => {
      const rel = path.join(dir, name);
      if (statSync(`${REPO_ROOT}${rel}`).isDirectory()) return sources(rel);
      return name.endsWith('.ts') ? [rel] : [];
    });
  }

  it('is the one way work is started after a request: nothing else hands work to the background runner', () => {
    // The runner's other users are not after-work: a write-behind's flush (drivers/write-behind.ts)
    // and the RDAP source's queued lookups and bootstrap refresh (ip/rdap), each given the runner
    // by the composition as its own `background`; and api-full-request's own work, still running
    // for a request that answered 202 past its wait.
    const allowed = new Set([
      'packages/core/src/kernel/after-work.ts',
      'packages/core/src/ip/rdap/create-rdap-source.ts',
      'packages/core/src/messaging/request-full-message.ts',
    ]);
    const callers = [...sources('packages/core/src'), ...sources('functions'), ...sources('supabase/functions')].filter(
      (f) => /\b(?:ctx|deps)\.background\(/.test(readFileSync(`${REPO_ROOT}${f}`, 'utf8')) && !allowed.has(f),
    );
    expect(callers).toEqual([]);
  });
});
