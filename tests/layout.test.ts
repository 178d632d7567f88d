import { readFile } from 'node:fs/promises';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { allFunctions } from '../functions/index.ts';
import { generateOpenApi, OPENAPI_FILE } from '../packages/host/src/openapi-cli.ts';
import { IP_DATA_STATIC_FILES, PREPARE_COMMAND, SUPABASE_DIR, supabaseDrift } from '../packages/host/src/supabase-layout.ts';
import { BUILT_MAIN, SERVE_NODE_OPTIONS } from './support/process.ts';

describe('deployment layout', () => {
  it('npm start runs, after its build, the same command as npm run serve (node options included), which tests and benches start', async () => {
    const { scripts } = JSON.parse(await readFile('package.json', 'utf8')) as { scripts: Record<string, string> };
    expect(scripts.start).toBe(`${scripts.build} && ${scripts.serve}`);
    expect(scripts.serve).toBe(['node', ...SERVE_NODE_OPTIONS, BUILT_MAIN].join(' '));
  });

  it.each(allFunctions.map((f) => [f.name]))('%s has a Supabase entrypoint serving it and a config.toml section', async (name) => {
    const def = allFunctions.find((f) => f.name === name);
    const entry = await readFile(`${SUPABASE_DIR}functions/${name}/index.ts`, 'utf8');
    // The entry point serves the very definition functions/index.ts lists, under whatever name route.ts exports it.
    const served = /^await serveFunction\((\w+)\);$/m.exec(entry)?.[1] ?? '';
    expect(entry).toContain(`import { ${served} } from '../../../functions/${name}/route.ts';`);
    const route = (await import(`../functions/${name}/route.ts`)) as Record<string, unknown>;
    expect(route[served]).toBe(def);
    const config = await readFile(`${SUPABASE_DIR}config.toml`, 'utf8');
    const section = config.split('\n\n').find((s) => s.split('\n').includes(`[functions.${name}]`)) ?? '';
    expect(section).toContain(`[functions.${name}]\nverify_jwt = false\nimport_map = "../deno.json"\nentrypoint = "./functions/${name}/index.ts"`);
    // A function that identifies IPs ships the edge data snapshot, and only such a function.
    expect(section.includes('static_files ='), `${name} static_files`).toBe(def?.usesIpData === true);
    for (const file of def?.usesIpData ? IP_DATA_STATIC_FILES : []) expect(section).toContain(JSON.stringify(file));
  });

  it(`the Supabase entry points and config.toml's function sections are the ones generated from functions/index.ts (run \`${PREPARE_COMMAND}\`)`, async () => {
    expect(await supabaseDrift()).toEqual({ missing: [], stale: [], extra: [] });
  });

  it('docs/openapi.json is the document generated from the route schemas (run `npm run openapi`)', async () => {
    expect(await readFile(OPENAPI_FILE, 'utf8')).toBe(await generateOpenApi());
  });

  it('the OpenAPI document passes an OpenAPI 3.1 validator, which refuses a broken one', async () => {
    const doc = JSON.parse(await readFile(OPENAPI_FILE, 'utf8')) as Record<string, unknown>;
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    // The check has teeth: the same document without its info object is not OpenAPI.
    const { info: _info, ...broken } = doc;
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });

  it('the OpenAPI document covers every function', async () => {
    const doc = JSON.parse(await generateOpenApi()) as { paths: Record<string, Record<string, unknown>> };
    for (const f of allFunctions) {
      const base = f.mount === 'functions' ? `/functions/v1/${f.name}` : `/${f.name}`;
      // A root function's route may fill the segment below it with a parameter (/t/{file}).
      const methods = Object.entries(doc.paths).flatMap(([p, ops]) => (p === base || p.startsWith(`${base}/`) ? Object.keys(ops) : []));
      expect(methods).toContain(f.method.toLowerCase());
    }
  });
});
