import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EDGE_DATA_FILES } from '@sightline/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { allFunctions } from '../functions/index.ts';
import { EDGE_DATA_DIR } from '../packages/host/src/edge-data.ts';
import { loadSchema, MIGRATIONS_DIR } from '../packages/host/src/migrations.ts';
import {
  CONFIG_MARKER,
  IP_DATA_STATIC_FILES,
  prepareSupabaseDeploy,
  SUPABASE_DIR,
  supabaseDrift,
  supabaseMigrations,
  writeSupabaseFiles,
} from '../packages/host/src/supabase-layout.ts';
import { catalogOf } from './support/catalog.ts';
import { openTestDatabase } from './support/db.ts';

/**
 * `npm run build:supabase` prepares a supabase folder for the Supabase CLI. Every test here points
 * it at a folder of its own (seeded with the repository's config.toml) and stands in for the IP
 * data build, so nothing in the repository is written.
 */
let dir: string;
const built: string[] = [];
const fakeEdgeData = async (outDir: string) => {
  built.push(outDir);
  return [];
};

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sightline-supabase-'));
  await copyFile(path.join(SUPABASE_DIR, 'config.toml'), path.join(dir, 'config.toml'));
  built.length = 0;
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/** Every file below `folder` (relative paths, sorted) with its bytes. */
async function filesIn(folder: string): Promise<Record<string, Buffer>> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  const names = entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(folder, path.join(e.parentPath, e.name)))
    .sort();
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, await readFile(path.join(folder, n))] as const)));
}

describe('preparing a Supabase deploy', () => {
  it('writes the versioned migrations, then one functions migration after them; nothing removed or edited lingers', async () => {
    const source = await filesIn(MIGRATIONS_DIR);
    await mkdir(path.join(dir, 'migrations'));
    await writeFile(path.join(dir, 'migrations', '0000_removed_since.sql'), 'select 1;\n');
    await writeFile(path.join(dir, 'migrations', '0001_foundation.sql'), '-- an older edit\n');

    const prepared = await prepareSupabaseDeploy(dir, { buildEdgeData: fakeEdgeData });

    const versioned = Object.keys(source).filter((n) => n.endsWith('.sql') && !n.includes('/'));
    const written = await filesIn(path.join(dir, 'migrations'));
    expect(Object.keys(written)).toEqual(prepared.migrations);
    const [functions, ...more] = prepared.migrations.filter((n) => !versioned.includes(n));
    expect(more).toEqual([]);
    expect(functions).toMatch(/^\d{14}_functions\.sql$/);
    // Name order is the order Supabase applies them in: the functions migration comes last.
    expect(prepared.migrations).toEqual([...versioned, functions].sort());
    expect(prepared.migrations.at(-1)).toBe(functions);
    // A versioned migration is copied as it is, after the definition files it requires.
    for (const name of versioned) expect(written[name]?.toString().endsWith(source[name]?.toString() ?? '-')).toBe(true);
    // The source is read, never written.
    expect(await filesIn(MIGRATIONS_DIR)).toEqual(source);
  });

  it('a changed function file is a functions migration of a new name, still sorted after the versioned ones', async () => {
    const schema = await loadSchema();
    const before = [...(await supabaseMigrations(schema)).keys()];
    const definitions = (schema.definitions ?? []).map((d) => (d.path === 'common/sl_iso.sql' ? { ...d, sql: `${d.sql}\n` } : d));
    const after = [...(await supabaseMigrations({ ...schema, definitions })).keys()];
    expect(after.slice(0, -1)).toEqual(before.slice(0, -1));
    expect(after.at(-1)).not.toBe(before.at(-1));
    expect([...after].sort()).toEqual(after);
  });

  it('a database built from supabase/migrations in name order has the catalog of one the runner builds', async () => {
    const files = await supabaseMigrations(await loadSchema());
    const supabase = await openTestDatabase({ empty: true });
    const runner = await openTestDatabase();
    try {
      for (const name of [...files.keys()].sort()) await supabase.db.exec(files.get(name) ?? '');
      const ours = ['schema_migrations', 'schema_definitions'];
      expect(await catalogOf(supabase.db, ours)).toEqual(await catalogOf(runner.db, ours));
    } finally {
      await supabase.drop();
      await runner.drop();
    }
  }, 120_000);

  it('a later functions migration drops what the files no longer define: an old signature, a removed file', async () => {
    const schema = await loadSchema();
    const supabase = await openTestDatabase({ empty: true });
    try {
      const first = await supabaseMigrations(schema);
      for (const name of [...first.keys()].sort()) await supabase.db.exec(first.get(name) ?? '');
      const definitions = (schema.definitions ?? [])
        .filter((d) => d.path !== 'ledger/sl_partner_of.sql')
        .map((d) =>
          d.path === 'common/sl_iso.sql'
            ? {
                ...d,
                sql: d.sql.replace('sl_iso(ts timestamptz) returns text', 'sl_iso(ts timestamptz, p_unused integer default 0) returns varchar'),
              }
            : d,
        );
      const next = await supabaseMigrations({ ...schema, definitions });
      const added = [...next.keys()].filter((n) => !first.has(n));
      expect(added).toHaveLength(1);
      await supabase.db.exec(next.get(added[0] ?? '') ?? '');
      const procs = await supabase.db<{ ident: string }>`
        select p.oid::regprocedure::text as ident from pg_proc p where p.proname in ('sl_iso', 'sl_partner_of') order by 1`;
      expect(procs.map((p) => p.ident)).toEqual(['sl_iso(timestamp with time zone,integer)']);
    } finally {
      await supabase.drop();
    }
  }, 120_000);

  it("builds the IP data where config.toml's static_files look for it", async () => {
    await prepareSupabaseDeploy(dir, { buildEdgeData: fakeEdgeData });
    expect(built).toEqual([path.join(dir, path.relative(SUPABASE_DIR, EDGE_DATA_DIR))]);
    const [outDir] = built;
    // Every file the real build writes is matched by a static_files glob (only `*` is used).
    for (const name of Object.values(EDGE_DATA_FILES)) {
      const shipped = IP_DATA_STATIC_FILES.some((glob) => {
        const full = path.join(dir, glob);
        const pattern = new RegExp(
          `^${path
            .basename(full)
            .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
            .replaceAll('*', '[^/]*')}$`,
        );
        return path.dirname(full) === outDir && pattern.test(name);
      });
      expect(shipped, name).toBe(true);
    }
  });

  it('writes the committed entry points and config.toml into a folder that has only the hand-written config', async () => {
    const config = await readFile(path.join(dir, 'config.toml'), 'utf8');
    await writeFile(path.join(dir, 'config.toml'), `${config.slice(0, config.indexOf(CONFIG_MARKER))}${CONFIG_MARKER}\n`);
    const prepared = await prepareSupabaseDeploy(dir, { buildEdgeData: fakeEdgeData });
    expect(prepared.changed).toEqual([...allFunctions.map((f) => `functions/${f.name}/index.ts`), 'config.toml'].sort());
    for (const file of prepared.changed) {
      expect(await readFile(path.join(dir, file), 'utf8'), file).toBe(await readFile(path.join(SUPABASE_DIR, file), 'utf8'));
    }
    // A second run finds nothing to change.
    expect((await prepareSupabaseDeploy(dir, { buildEdgeData: fakeEdgeData })).changed).toEqual([]);
  });
});

describe('the generated Supabase layout', () => {
  it('the freshness check names a missing entry point, a stale one, an edited config section and a stray function folder', async () => {
    await writeSupabaseFiles(dir);
    await rm(path.join(dir, 'functions/ip-to-company/index.ts'));
    await writeFile(path.join(dir, 'functions/partner-pool-state/index.ts'), '// edited by hand\n');
    await mkdir(path.join(dir, 'functions/hand-made'));
    await writeFile(path.join(dir, 'functions/hand-made/index.ts'), 'Deno.serve(() => new Response());\n');
    const config = await readFile(path.join(dir, 'config.toml'), 'utf8');
    await writeFile(
      path.join(dir, 'config.toml'),
      config.replace('[functions.ip-to-best-fit]\nverify_jwt = false\n', '[functions.ip-to-best-fit]\n'),
    );

    expect(await supabaseDrift(dir)).toEqual({
      missing: ['functions/ip-to-company/index.ts'],
      stale: ['config.toml', 'functions/partner-pool-state/index.ts'],
      extra: ['functions/hand-made/index.ts'],
    });
  });

  it('a config section for a function that is not listed is stale config', async () => {
    await writeSupabaseFiles(dir);
    const config = await readFile(path.join(dir, 'config.toml'), 'utf8');
    await writeFile(path.join(dir, 'config.toml'), `${config}\n[functions.gone]\nverify_jwt = false\n`);
    expect(await supabaseDrift(dir)).toEqual({ missing: [], stale: ['config.toml'], extra: [] });
  });

  it('dropping a function from functions/index.ts removes its entry point and config section on the next run', async () => {
    await writeSupabaseFiles(dir);
    const remaining = allFunctions.filter((f) => f.name !== 'partner-pool-state');
    expect(await supabaseDrift(dir, remaining)).toEqual({ missing: [], stale: ['config.toml'], extra: ['functions/partner-pool-state/index.ts'] });

    expect(await writeSupabaseFiles(dir, remaining)).toEqual(['config.toml', 'functions/partner-pool-state/']);
    expect(await readdir(path.join(dir, 'functions'))).not.toContain('partner-pool-state');
    expect(await readFile(path.join(dir, 'config.toml'), 'utf8')).not.toContain('partner-pool-state');
    expect(await supabaseDrift(dir, remaining)).toEqual({ missing: [], stale: [], extra: [] });
  });

  it('a folder it did not generate stops the run before anything is written', async () => {
    await mkdir(path.join(dir, 'functions/hand-made'), { recursive: true });
    await writeFile(path.join(dir, 'functions/hand-made/index.ts'), 'Deno.serve(() => new Response());\n');
    await expect(writeSupabaseFiles(dir)).rejects.toThrow('functions/hand-made/index.ts');
    expect(await readdir(path.join(dir, 'functions'))).toEqual(['hand-made']);
  });

  it("keeps config.toml's hand-written lines above the marker and needs the marker", async () => {
    const config = await readFile(path.join(dir, 'config.toml'), 'utf8');
    await writeFile(path.join(dir, 'config.toml'), `# a note an operator added\n${config}`);
    await writeSupabaseFiles(dir);
    const written = await readFile(path.join(dir, 'config.toml'), 'utf8');
    expect(written.startsWith(`# a note an operator added\n${config.slice(0, config.indexOf(CONFIG_MARKER))}${CONFIG_MARKER}\n`)).toBe(true);

    await writeFile(path.join(dir, 'config.toml'), 'project_id = "sightline"\n');
    await expect(writeSupabaseFiles(dir)).rejects.toThrow(CONFIG_MARKER);
  });

  it('a listed function is refused unless functions/<name>/route.ts exports it and its name is a plain kebab-case word list', async () => {
    const [first] = allFunctions;
    if (!first) throw new Error('functions/index.ts lists no function');
    await expect(writeSupabaseFiles(dir, [{ ...first, name: 'no-such-function' }])).rejects.toThrow();
    await expect(writeSupabaseFiles(dir, [{ ...first, name: 'Bad Name' }])).rejects.toThrow('is not lower-case words');
    await expect(writeSupabaseFiles(dir, [first, first])).rejects.toThrow(`two functions are named '${first.name}'`);
  });
});
