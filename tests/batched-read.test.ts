import { createBatchedRead } from '@sightline/core';
import { describe, expect, it } from 'vitest';

/** A reader over a map the test changes, recording each statement's keys; `hold` keeps statements waiting. */
function fakeStore(initial: Record<string, number>) {
  const rows = new Map(Object.entries(initial));
  const statements: string[][] = [];
  let gate: Promise<void> | undefined;
  let fail: Error | undefined;
  const read = async (keys: string[]) => {
    statements.push([...keys]);
    // What the statement sees is the store as the statement starts, as Postgres would.
    const seen = new Map(keys.flatMap((k) => (rows.has(k) ? [[k, rows.get(k) as number] as const] : [])));
    const failing = fail;
    await gate;
    if (failing) throw failing;
    return seen;
  };
  return {
    rows,
    statements,
    read,
    hold() {
      let open = () => {};
      gate = new Promise((r) => (open = r));
      return () => {
        gate = undefined;
        open();
      };
    },
    failNext(err: Error | undefined) {
      fail = err;
    },
  };
}

describe('batched reads', () => {
  it('reads asked in the same turn share one statement, each answered with its own row', async () => {
    const store = fakeStore({ a: 1, b: 2, c: 3 });
    const read = createBatchedRead({ read: store.read });
    const answers = await Promise.all(['a', 'b', 'a', 'c', 'missing'].map((k) => read(k)));
    expect(answers).toEqual([1, 2, 1, 3, undefined]);
    expect(store.statements).toEqual([['a', 'b', 'c', 'missing']]);
  });

  it('a read asked while a statement is out waits for the next one, so it sees writes made before it was asked', async () => {
    const store = fakeStore({ a: 1 });
    const read = createBatchedRead({ read: store.read });
    const release = store.hold();
    const first = read('a');
    await new Promise((r) => setImmediate(r)); // the first statement is sent and waits
    expect(store.statements).toHaveLength(1);
    store.rows.set('a', 2); // a write commits while the first statement is out
    const second = read('a');
    release();
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    expect(store.statements).toEqual([['a'], ['a']]);
  });

  it('a failed statement fails every read of its batch with its error, and the next batch reads again', async () => {
    const store = fakeStore({ a: 1, b: 2 });
    const read = createBatchedRead({ read: store.read });
    store.failNext(new Error('connection lost'));
    const failed = await Promise.allSettled([read('a'), read('b')]);
    expect(failed.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'answered'))).toEqual(['connection lost', 'connection lost']);
    store.failNext(undefined);
    expect(await Promise.all([read('a'), read('b')])).toEqual([1, 2]);
    expect(store.statements).toHaveLength(2);
  });

  it('a batch that reaches its key limit is sent at once, and the reads after it start the next', async () => {
    const store = fakeStore({ a: 1, b: 2, c: 3, d: 4, e: 5 });
    const read = createBatchedRead({ read: store.read, maxKeys: 2 });
    const answers = Promise.all(['a', 'a', 'b', 'c', 'd', 'e'].map((k) => read(k)));
    // The first two batches went out without waiting for the turn to end.
    expect(store.statements).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    expect(await answers).toEqual([1, 1, 2, 3, 4, 5]);
    expect(store.statements).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
  });
});
