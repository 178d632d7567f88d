import { type CoreDeps, coalescedKick, createBackgroundRunner } from '@sightline/core';
import { describe, expect, it } from 'vitest';
import { sleep } from './support/wait.ts';

/**
 * The kick that starts a worker after a request: one run at a time per process, kicks during a run
 * asking for one more, and (for the tracker) runs under a stream of kicks spaced out so each takes a
 * batch. Timed with the real clock against generous bounds: what is checked is order and spacing,
 * not speed.
 */
function harness(minIntervalMs?: number, runMs = 20) {
  const runner = createBackgroundRunner({ debug() {}, info() {}, warn() {}, error() {} });
  const ctx = { background: (name: string, task: () => Promise<unknown>) => runner.run(name, task) } as unknown as CoreDeps;
  const starts: number[] = [];
  let running = 0;
  let overlapped = false;
  const kick = coalescedKick(
    'test',
    async () => {
      if (running++) overlapped = true;
      starts.push(performance.now());
      await sleep(runMs);
      running--;
    },
    minIntervalMs === undefined ? {} : { minIntervalMs },
  );
  return { kick: () => kick(ctx), starts, drain: () => runner.drain(), overlapped: () => overlapped };
}

describe('coalescedKick', () => {
  it('runs a lone kick at once, and kicks during a run as one more run, never two at a time', async () => {
    const h = harness();
    const t0 = performance.now();
    h.kick();
    // Kicks before the run has started are its own work; these come once it has.
    await sleep(5);
    for (let i = 0; i < 10; i++) h.kick();
    await h.drain();
    expect(h.starts).toHaveLength(2);
    expect((h.starts[0] as number) - t0).toBeLessThan(50);
    expect(h.overlapped()).toBe(false);
  });

  it('spaces the runs a stream of kicks asks for by minIntervalMs, start to start', async () => {
    const h = harness(150, 10);
    const t0 = performance.now();
    h.kick();
    // A stream of kicks for about 400 ms: without spacing each 10 ms run would be followed by another.
    const until = t0 + 400;
    while (performance.now() < until) {
      h.kick();
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
    const h = harness(100, 60);
    h.kick();
    await sleep(5);
    h.kick();
    await h.drain();
    expect(h.starts).toHaveLength(2);
    const gap = (h.starts[1] as number) - (h.starts[0] as number);
    expect(gap).toBeGreaterThanOrEqual(59);
    expect(gap).toBeLessThan(140);
  });
});
