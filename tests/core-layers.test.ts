import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/process.ts';

/**
 * The shape of packages/core/src (docs/architecture.md, "The parts and the rules between them"),
 * read from the files themselves: no loose file but the entry, no import circle (type imports
 * count: a circle of types is still two files that cannot be read apart), and no import from a
 * lower layer up to a higher one. Biome's noRestrictedImports (biome.json) says the same per
 * folder while editing; this test also sees circles, which a per-file rule cannot.
 */
const CORE = `${REPO_ROOT}packages/core/src/`;

/** Lowest first. The domain folders share one layer: they may use each other, without a circle. */
const LAYER: Record<string, number> = { kernel: 0, drivers: 1, http: 3, compose: 4 };
const DOMAIN_LAYER = 2;
const layerOf = (file: string) => LAYER[file.split('/')[0] ?? ''] ?? DOMAIN_LAYER;

function coreFiles(dir = CORE): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return coreFiles(full);
    return name.endsWith('.ts') ? [path.relative(CORE, full)] : [];
  });
}

const SPECIFIER = /(?:^|\n)\s*(?:import|export)\b[^'";]*?from\s*'([^']+)'|import\(\s*'([^']+)'\s*\)|(?:^|\n)\s*import\s*'([^']+)'/g;

/** Each core file's imports: other core files (relative, resolved) and packages (as written). */
function importsOf(file: string): { files: string[]; packages: string[] } {
  const text = readFileSync(CORE + file, 'utf8');
  const files: string[] = [];
  const packages: string[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec) continue;
    if (!spec.startsWith('.')) packages.push(spec);
    else if (spec.endsWith('.ts')) files.push(path.normalize(path.join(path.dirname(file), spec)));
  }
  return { files, packages };
}

/** Tarjan's strongly connected components with more than one file (or a file importing itself). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      for (;;) {
        const w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
        if (w === v) break;
      }
      if (component.length > 1 || graph.get(v)?.includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('core layers', () => {
  const files = coreFiles();
  const graph = new Map(files.map((f) => [f, importsOf(f).files]));

  it('holds no loose file but the package entry', () => {
    expect(files.filter((f) => !f.includes('/'))).toEqual(['index.ts']);
  });

  it('every core import names a file that exists', () => {
    const missing = [...graph].flatMap(([f, deps]) => deps.filter((d) => !graph.has(d)).map((d) => `${f} -> ${d}`));
    expect(missing).toEqual([]);
  });

  it('has no import circle', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('imports only from its own layer or a lower one', () => {
    const upward = [...graph].flatMap(([f, deps]) =>
      f === 'index.ts' ? [] : deps.filter((d) => layerOf(d) > layerOf(f)).map((d) => `${f} -> ${d}`),
    );
    expect(upward).toEqual([]);
  });

  it('speaks Hono only in the HTTP layer and the composition', () => {
    const hono = files.filter((f) => layerOf(f) < (LAYER.http as number) && importsOf(f).packages.some((p) => p === 'hono' || p.startsWith('hono/')));
    expect(hono).toEqual([]);
  });

  it('finds a circle and an upward import when there is one (the checks can fail)', () => {
    expect(
      circles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['a.ts']],
          ['c.ts', []],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts']]);
    expect(layerOf('kernel/context.ts')).toBeLessThan(layerOf('ip/resolve-ip.ts'));
    expect(layerOf('ip/resolve-ip.ts')).toBeLessThan(layerOf('http/route.ts'));
  });
});
