import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * A fresh clone stands on its own: it builds, starts and passes its tests with nothing beside it.
 * The public range lists the product needs are shipped in packages/core/data/ip-ranges/; nothing
 * may reach for a sibling checkout at run or test time. Documentation may still cite one.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * A relative path to the sibling, the data folder in it, or a path joined from its parts. (The
 * Supabase functions' own `_shared/` folder is no sibling checkout.)
 */
const FORBIDDEN = [/\.\.\/shared\b/, /(^|[^\w])shared\/data/, /['"]\.\.['"],\s*['"]shared['"]/];
/** This file spells the patterns out. */
const SELF = 'tests/fresh-clone.test.ts';

describe('a fresh clone', () => {
  it('has no file that reads a sibling shared checkout at run or test time (documentation aside)', async () => {
    // Tracked files and new ones not yet committed (what a commit of this tree would hold).
    const { stdout } = await promisify(execFile)('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: ROOT,
      maxBuffer: 64 << 20,
    });
    const files = stdout.split('\0').filter((f) => f && f !== SELF && !f.endsWith('.md') && !f.startsWith('docs/'));
    expect(files.length).toBeGreaterThan(100);
    const offenders: string[] = [];
    for (const file of files) {
      const text = await readFile(`${ROOT}/${file}`, 'utf8').catch(() => '');
      text.split('\n').forEach((line, i) => {
        if (FORBIDDEN.some((re) => re.test(line))) offenders.push(`${file}:${i + 1}: ${line.trim().slice(0, 120)}`);
      });
    }
    expect(offenders).toEqual([]);
    // The guard would have caught the read this rule was written after (the line is assembled here,
    // so this file holds no such path itself).
    const before = `const SHARED = new URL('${['..', '..', 'shared', 'data'].join('/')}/', import.meta.url);`;
    expect(FORBIDDEN.some((re) => re.test(before))).toBe(true);
    expect(FORBIDDEN.some((re) => re.test("static_files = ['./functions/_shared/ip-data/*.gz']"))).toBe(false);
  });
});
