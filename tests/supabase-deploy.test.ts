import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { allFunctions } from '../functions/index.ts';
import { EDGE_DATA_DIR } from '../packages/host/src/edge-data.ts';
import { EDGE_DATA_FILES } from '../packages/host/src/ip-snapshot-sources.ts';
import { MIGRATIONS_DIR } from '../packages/host/src/migrations.ts';
import {
  CONFIG_MARKER,
  IP_DATA_STATIC_FILES,
  prepareSupabaseDeploy,
  SUPABASE_DIR,
  supabaseDrift,
  writeSupabaseFiles,
} from '../packages/host/src/supabase-layout.ts';

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

async function filesIn(folder: string): Promise<Record<string, Buffer>> {
  const names = (await readdir(folder)).sort();
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, await readFile(path.join(folder, n))] as const)));
}

describe('preparing a Supabase deploy', () => {
  it('writes exactly migrations/ to supabase/migrations, so a removed or edited migration cannot linger', async () => {
    const source = await filesIn(MIGRATIONS_DIR);
    await mkdir(path.join(dir, 'migrations'));
    await writeFile(path.join(dir, 'migrations', '0000_removed_since.sql'), 'select 1;\n');
    await writeFile(path.join(dir, 'migrations', '0001_foundation.sql'), '-- an older edit\n');

    const prepared = await prepareSupabaseDeploy(dir, { buildEdgeData: fakeEdgeData });

    expect(await filesIn(path.join(dir, 'migrations'))).toEqual(source);
    expect(prepared.migrations).toEqual(Object.keys(source).filter((n) => n.endsWith('.sql')));
    // The source is read, never written.
    expect(await filesIn(MIGRATIONS_DIR)).toEqual(source);
  });

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
