/**
 * The queue postgres.js keeps its connections and waiting queries in, written again so that it
 * stays the size of what it holds. The production build puts it in place of postgres.js's own
 * `src/queue.js` (build.ts); the interface is the same: `length`, `push`, `shift`, `remove`.
 *
 * postgres.js 3.4.9's queue leaves a hole for every `shift` and frees its array only when it
 * empties. The pool's queue of idle connections empties only when every connection is busy at
 * once, so under any load below that (a pool opened by a burst, then steadier traffic) it grew by
 * one slot per query, and each query's completion scanned the whole array looking for the
 * connection it had already shifted out. Measured: a 10-connection pool at 3 queries in flight
 * fell from 34,000 to 17,000 queries/s over 160,000 queries; the soak bench's server spent 40% of
 * its CPU in that scan by its tenth minute, and its throughput fell by a third
 * (docs/decisions/performance.md, "postgres.js is bundled with a queue of our own").
 *
 * Here `remove` looks only at the live part, and the array is compacted once more than half of it
 * is spent, so both stay proportional to what is queued.
 */

/** Spent slots tolerated before compacting: small queues never copy. */
const COMPACT_AFTER = 64;

export interface PostgresQueue<T> {
  readonly length: number;
  /** Slots held, spent ones included: what the queue costs, for tests. */
  readonly capacity: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T): T | null;
}

export default function Queue<T>(initial: T[] = []): PostgresQueue<T> {
  let xs: (T | undefined)[] = initial.slice();
  let head = 0;
  return {
    get length() {
      return xs.length - head;
    },
    get capacity() {
      return xs.length;
    },
    push(x) {
      xs.push(x);
      return x;
    },
    shift() {
      if (head >= xs.length) return undefined;
      const out = xs[head];
      xs[head++] = undefined;
      if (head === xs.length) {
        xs = [];
        head = 0;
      } else if (head > COMPACT_AFTER && head * 2 > xs.length) {
        xs = xs.slice(head);
        head = 0;
      }
      return out;
    },
    remove(x) {
      const at = xs.indexOf(x, head);
      if (at === -1) return null;
      xs.splice(at, 1);
      return x;
    },
  };
}
