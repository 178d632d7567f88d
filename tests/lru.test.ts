import { describe, expect, it } from 'vitest';
import { BoundedLru } from '../packages/core/src/kernel/lru.ts';

describe('BoundedLru', () => {
  it('evicts the least recently used entry past its bound', () => {
    const lru = new BoundedLru<number>(2);
    lru.set('a', 1);
    lru.set('b', 2);
    expect(lru.get('a')).toBe(1); // a was the older half: it moves, b is now the oldest
    lru.set('c', 3);
    expect([lru.get('a'), lru.get('b'), lru.get('c'), lru.size]).toEqual([1, undefined, 3, 2]);
  });

  it('never evicts a key used among the last maxEntries/2 distinct keys, on a random workload', () => {
    const max = 64;
    const lru = new BoundedLru<number>(max);
    let x = 12345;
    const recent: string[] = []; // distinct keys, most recent last
    for (let i = 0; i < 50_000; i++) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      // A skewed workload: a few hot keys, a long tail.
      const key = `k${x % 7 === 0 ? x % 5 : x % 400}`;
      if (lru.get(key) === undefined) lru.set(key, i);
      const at = recent.indexOf(key);
      if (at >= 0) recent.splice(at, 1);
      recent.push(key);
      if (recent.length > max / 2) recent.shift();
      if (i % 97 === 0) for (const k of recent) expect(lru.get(k), `${k} at step ${i}`).not.toBeUndefined();
    }
    expect(lru.size).toBe(max);
  });

  it('set replaces a value, delete and clear remove', () => {
    const lru = new BoundedLru<string>(3);
    lru.set('a', 'x');
    lru.set('a', 'y');
    lru.set('b', 'z');
    lru.delete('b');
    expect([lru.get('a'), lru.get('b'), lru.size]).toEqual(['y', undefined, 1]);
    lru.clear();
    expect(lru.size).toBe(0);
  });
});
