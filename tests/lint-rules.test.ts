import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/process.ts';

/**
 * The layering the style guide asks for, held by the linter rather than by memory (biome.json):
 * a function is a thin transport that never reaches the database layer or a host, and core knows
 * no host and no runtime. Each case lints a probe as if it lived at that path.
 */
function lintAs(dir: 'functions' | 'packages/core/src' | 'supabase/functions/_shared', source: string) {
  // Biome reports nothing for stdin, so the probe is written where it claims to live, then removed.
  const probe = `${dir}/lint-probe-${randomBytes(4).toString('hex')}.ts`;
  writeFileSync(`${REPO_ROOT}${probe}`, source);
  try {
    const out = spawnSync(`${REPO_ROOT}node_modules/.bin/biome`, ['lint', probe], { cwd: REPO_ROOT, encoding: 'utf8' });
    return { code: out.status, output: `${out.stdout}${out.stderr}` };
  } finally {
    rmSync(`${REPO_ROOT}${probe}`, { force: true });
  }
}

describe('import rules', () => {
  it.each([
    ['a driver', "import postgres from 'postgres';\nexport const p = postgres;\n"],
    ['the embedded database', "import { PGlite } from '@electric-sql/pglite';\nexport const p = PGlite;\n"],
    ['a host', "import { createHostApp } from '@sightline/host';\nexport const p = createHostApp;\n"],
    ['the database layer through core', "import { connectPostgres } from '@sightline/core';\nexport const p = connectPostgres;\n"],
    ['a core file by path', "import { migrate } from '../../packages/core/src/db.ts';\nexport const p = migrate;\n"],
  ])('a function may not import %s', (_what, source) => {
    const r = lintAs('functions', source);
    expect(r.code).not.toBe(0);
    expect(r.output).toMatch(/noRestrictedImports/);
  });

  it('a function may import its verbs from core', () => {
    const r = lintAs('functions', "import { createChildKey } from '@sightline/core';\nexport const p = createChildKey;\n");
    expect(r.output).not.toMatch(/noRestrictedImports/);
  });

  it.each([
    ['a host', "import { createHostApp } from '@sightline/host';\nexport const p = createHostApp;\n"],
    ['a host file by path', "import { readNodeBody } from '../../host/src/node-body.ts';\nexport const p = readNodeBody;\n"],
    ['a Node built-in', "import { readFile } from 'node:fs/promises';\nexport const p = readFile;\n"],
  ])('core may not import %s', (_what, source) => {
    const r = lintAs('packages/core/src', source);
    expect(r.code, r.output).not.toBe(0);
    expect(r.output).toMatch(/noRestrictedImports/);
  });

  it.each([
    ['the Node host', "import { createHostApp } from '@sightline/host';\nexport const p = createHostApp;\n"],
    ['a Node host file by path', "import { readAsnBase } from '../../../packages/host/src/ip-base.ts';\nexport const p = readAsnBase;\n"],
  ])('the Deno entry (supabase/) may not import %s', (_what, source) => {
    const r = lintAs('supabase/functions/_shared', source);
    expect(r.code, r.output).not.toBe(0);
    expect(r.output).toMatch(/noRestrictedImports/);
  });
});
