import { BoundedLru } from '../packages/core/src/kernel/lru.ts';
import { type Figure, figure, formatTable, machineLine, printFigures } from './lib.ts';

/**
 * `npm run bench -- caches`: a hit on the hottest key of a full in-process cache (the auth cache
 * and the recent lookup results both sit on BoundedLru), against the textbook LRU on a Map that
 * deletes and re-inserts the key on every hit, same sizes, same run. The textbook version's cost
 * grows with the map's size (see lru.ts); the figure that matters is the one at production sizes.
 */
const SIZES = [1_000, 50_000, 100_000];

function fill<T extends { set(k: string, v: number): void }>(cache: T, size: number): string[] {
  const keys: string[] = [];
  for (let i = 0; i < size; i++) {
    const k = `sl_live_${String(i).padStart(40, '0')}`;
    keys.push(k);
    cache.set(k, i);
  }
  return keys;
}

/** ns per hit over `n` hits of one key. */
function time(get: (k: string) => unknown, key: string, n: number): number {
  for (let i = 0; i < 1000; i++) get(key);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) get(key);
  return ((performance.now() - t0) * 1e6) / n;
}

export async function run(): Promise<void> {
  const rows: string[][] = [];
  const figures: Figure[] = [];
  for (const size of SIZES) {
    const ours = new BoundedLru<number>(size);
    const hot = fill(ours, size)[size - 1] as string;
    const textbook = new Map<string, number>();
    fill(textbook, size);
    const moveOnHit = (k: string) => {
      const v = textbook.get(k);
      if (v === undefined) return undefined;
      textbook.delete(k);
      textbook.set(k, v);
      return v;
    };
    // The textbook side is slow at size: fewer hits keep its run short without changing its rate.
    const a = time((k) => ours.get(k), hot, 2_000_000);
    const b = time(moveOnHit, hot, size >= 50_000 ? 5_000 : 200_000);
    rows.push([size.toLocaleString('en'), `${a.toFixed(0)} ns`, `${b.toFixed(0)} ns`, `${(b / a).toFixed(0)}×`]);
    figures.push(
      figure('caches', `hit on the hottest key, ${size.toLocaleString('en')} entries, vs a Map moved on every hit`, {
        ours: a,
        baseline: b,
        unit: 'ns',
      }),
    );
  }
  process.stdout.write(
    [
      'bench caches',
      `  ${machineLine()}`,
      '',
      'a hit on the hottest key of a full cache',
      formatTable(['entries', 'BoundedLru', 'move on every hit', 'ratio'], [rows]),
      '',
    ].join('\n'),
  );
  printFigures(figures);
}
