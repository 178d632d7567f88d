import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import Queue from '../packages/host/src/postgres-queue.ts';

/**
 * The queue the production build gives postgres.js in place of its own (build.ts): the same
 * answers for any sequence of operations, in room proportional to what it holds.
 */
type Op = { op: 'push'; x: number } | { op: 'shift' } | { op: 'remove'; x: number };

interface QueueLike {
  readonly length: number;
  push(x: unknown): unknown;
  shift(): unknown;
  remove(x: unknown): unknown;
}

// postgres.js's own queue, by path: the package exports only its entry point. Not a literal, so the
// type checker does not look for declarations the package does not ship.
const ORIGINAL = '../node_modules/postgres/src/queue.js';
const original = async () => ((await import(ORIGINAL)) as { default: () => QueueLike }).default();

const ops = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant('push' as const), x: fc.integer({ min: 0, max: 40 }) }),
    fc.record({ op: fc.constant('shift' as const) }),
    fc.record({ op: fc.constant('remove' as const), x: fc.integer({ min: 0, max: 40 }) }),
  ),
  { maxLength: 400 },
);

describe('postgres-queue', () => {
  it('answers every sequence of push, shift and remove as postgres.js’s queue does (seeded)', async () => {
    await fc.assert(
      fc.asyncProperty(ops, async (sequence: Op[]) => {
        const theirs = await original();
        const ours = Queue<unknown>();
        // Objects, as postgres.js queues them (connections, queries): the same value pushed twice is two entries.
        const objects = Array.from({ length: 41 }, (_, i) => ({ i }));
        for (const step of sequence) {
          if (step.op === 'push') expect(ours.push(objects[step.x])).toBe(theirs.push(objects[step.x]));
          else if (step.op === 'remove') expect(ours.remove(objects[step.x])).toBe(theirs.remove(objects[step.x]));
          else if (theirs.length > 0) expect(ours.shift()).toBe(theirs.shift());
          else expect(ours.shift()).toBeUndefined();
          expect(ours.length).toBe(theirs.length);
        }
      }),
      { seed: 14, numRuns: 300 },
    );
  });

  it('keeps the room of what it holds under a steady stream that never empties it', () => {
    // The pool's idle connections: a few always waiting, one taken and one given back per query.
    const q = Queue<object>();
    const connections = Array.from({ length: 7 }, (_, i) => ({ i }));
    for (const c of connections) q.push(c);
    for (let query = 0; query < 100_000; query++) {
      const c = q.shift() as object;
      expect(q.remove(c)).toBeNull(); // what the pool does when the connection comes back
      q.push(c);
    }
    expect(q.length).toBe(7);
    expect(q.capacity).toBeLessThanOrEqual(7 * 2 + 64);
  });

  it('takes out a queued entry wherever it is, and nothing already shifted out', () => {
    const [a, b, c] = [{ n: 'a' }, { n: 'b' }, { n: 'c' }];
    const q = Queue<object>([a, b, c]);
    expect(q.shift()).toBe(a);
    expect(q.remove(a)).toBeNull();
    expect(q.remove(c)).toBe(c);
    expect(q.length).toBe(1);
    expect(q.shift()).toBe(b);
    expect(q.shift()).toBeUndefined();
    expect(q.length).toBe(0);
  });
});
