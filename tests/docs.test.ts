import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EnvSchema } from '../packages/core/src/compose/config.ts';
import { REPO_ROOT } from './support/process.ts';

/**
 * The docs stay walkable: a short README that maps the rest, no document too long to read, lines at
 * the formatter's width, no references to an issue tracker a reader does not have, and no link that
 * leads nowhere. docs/openapi.json is generated and checked by tests/layout.test.ts instead.
 */

const README = 'README.md';

/** README.md and every Markdown file under docs/, as paths relative to the repository. */
async function markdownFiles(): Promise<string[]> {
  const entries = await readdir(path.join(REPO_ROOT, 'docs'), { recursive: true, withFileTypes: true });
  const docs = entries
    .filter((e) => e.isFile() && e.name.endsWith('.md'))
    .map((e) => path.relative(REPO_ROOT, path.join(e.parentPath, e.name)))
    .sort();
  return [README, ...docs];
}

const read = (file: string) => readFile(path.join(REPO_ROOT, file), 'utf8');

/** A file's lines, without the empty string after its final newline. */
function linesOf(text: string): string[] {
  const lines = text.split('\n');
  return lines.at(-1) === '' ? lines.slice(0, -1) : lines;
}

/** The text outside fenced code blocks and inline code spans, line numbers kept. */
function prose(text: string): string[] {
  let fenced = false;
  return linesOf(text).map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, '');
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

async function anchorsIn(file: string): Promise<Set<string>> {
  const headings = prose(await read(file)).flatMap((line) => /^#{1,6}\s+(.*)$/.exec(line)?.[1] ?? []);
  return new Set(headings.map(anchorOf));
}

describe('the docs a newcomer walks', () => {
  it('the README fits in 200 lines', async () => {
    expect(linesOf(await read(README)).length).toBeLessThanOrEqual(200);
  });

  it('no document is over 400 lines', async () => {
    const long: string[] = [];
    for (const file of await markdownFiles()) {
      const n = linesOf(await read(file)).length;
      if (n > 400) long.push(`${file}: ${n} lines`);
    }
    expect(long).toEqual([]);
  });

  it('no line is over 150 characters, the formatter’s width', async () => {
    const long: string[] = [];
    for (const file of await markdownFiles()) {
      linesOf(await read(file)).forEach((line, i) => {
        if ([...line].length > 150) long.push(`${file}:${i + 1} (${[...line].length})`);
      });
    }
    expect(long).toEqual([]);
  });

  it('no document refers to an issue by number', async () => {
    const refs: string[] = [];
    for (const file of await markdownFiles()) {
      prose(await read(file)).forEach((line, i) => {
        const found = /\bissues? \d+\b/i.exec(line) ?? /#\d+\b/.exec(line);
        if (found) refs.push(`${file}:${i + 1}: ${found[0]}`);
      });
    }
    expect(refs).toEqual([]);
  });

  it('every relative link leads to a file that exists, and to a heading it has', async () => {
    const broken: string[] = [];
    for (const file of await markdownFiles()) {
      const lines = prose(await read(file));
      for (const [i, line] of lines.entries()) {
        for (const [, target = ''] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
          if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
          const [linkPath = '', anchor] = target.split('#');
          const resolved = linkPath ? path.join(path.dirname(file), linkPath) : file;
          if (!existsSync(path.join(REPO_ROOT, resolved))) {
            broken.push(`${file}:${i + 1}: ${target} (no such file)`);
          } else if (anchor && resolved.endsWith('.md') && !(await anchorsIn(resolved)).has(anchor)) {
            broken.push(`${file}:${i + 1}: ${target} (no such heading)`);
          }
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('every source path a document names in code quotes exists', async () => {
    // A path with a folder in it (`ip/resolve-ip.ts`, `core/src/kernel/errors.ts`) is read from the
    // repository root or from the places docs abbreviate: core's src, packages, migrations, the hosts.
    const roots = [
      '',
      'packages/core/src/',
      'packages/',
      'migrations/',
      'migrations/functions/',
      'packages/host/src/',
      'supabase/',
      'tests/',
      'bench/',
    ];
    const missing: string[] = [];
    for (const file of await markdownFiles()) {
      prose(await read(file)).forEach((line, i) => {
        for (const [, named = ''] of line.matchAll(/`([A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)+\.(?:ts|sql|json|toml))`/g)) {
          const candidates = roots.map((r) => r + named.replace(/^core\/src\//, 'packages/core/src/'));
          if (!candidates.some((c) => existsSync(path.join(REPO_ROOT, c)))) missing.push(`${file}:${i + 1}: ${named}`);
        }
      });
    }
    expect(missing).toEqual([]);
  });

  it('every setting config.ts reads is documented once in docs/operating.md', async () => {
    const operating = await read('docs/operating.md');
    // Each setting is one list item of its own: "- `NAME` (default): meaning".
    const defined = (name: string) => operating.match(new RegExp(`^- \`${name}\` \\(`, 'gm'))?.length ?? 0;
    const missing = Object.keys(EnvSchema.shape).filter((name) => defined(name) !== 1);
    expect(missing).toEqual([]);
  });
});
