import type { CoreDeps } from '@sightline/core';

/**
 * `deps` whose database counts the statements sent whose text contains each needle: for a test of
 * how many round trips a verb makes (a claim's one read, not one per visitor).
 */
export function countingStatements(deps: CoreDeps, needles: string[]): { ctx: CoreDeps; seen: Record<string, number> } {
  const seen = Object.fromEntries(needles.map((n) => [n, 0])) as Record<string, number>;
  const db = new Proxy(deps.db, {
    apply(target, self, args: unknown[]) {
      const text = Array.isArray(args[0]) ? (args[0] as string[]).join('?') : '';
      for (const n of needles) if (text.includes(n)) seen[n] = (seen[n] ?? 0) + 1;
      return Reflect.apply(target, self, args);
    },
  });
  return { ctx: { ...deps, db }, seen };
}
