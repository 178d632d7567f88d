import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { allFunctions } from '../functions/index.ts';
import { generateOpenApi, OPENAPI_FILE } from '../packages/host/src/openapi-cli.ts';
import { REPO_ROOT } from './support/process.ts';

describe('deployment layout', () => {
  it.each(allFunctions.map((f) => [f.name]))('%s has a Supabase entrypoint and a config.toml section', async (name) => {
    expect(existsSync(`${REPO_ROOT}functions/${name}/route.ts`)).toBe(true);
    const entry = await readFile(`${REPO_ROOT}supabase/functions/${name}/index.ts`, 'utf8');
    expect(entry).toContain(`../../../functions/${name}/route.ts`);
    expect(entry).toContain('serveFunction(');
    const config = await readFile(`${REPO_ROOT}supabase/config.toml`, 'utf8');
    const section = new RegExp(
      `\\[functions\\.${name}\\]\\nverify_jwt = false\\nimport_map = "\\.\\./deno\\.json"\\nentrypoint = "\\./functions/${name}/index\\.ts"`,
    );
    expect(config).toMatch(section);
    // A function that identifies IPs ships the edge data snapshot, and only such a function.
    const staticFiles = new RegExp(`entrypoint = "\\./functions/${name}/index\\.ts"\\n(#[^\\n]*\\n)?static_files = \\["\\./functions/_shared/ip-data/\\*\\.gz"\\]`);
    const usesIpData = allFunctions.find((f) => f.name === name)?.usesIpData === true;
    expect(staticFiles.test(config), `${name} static_files`).toBe(usesIpData);
  });

  it('docs/openapi.json is the document generated from the route schemas (run `npm run openapi`)', async () => {
    expect(await readFile(OPENAPI_FILE, 'utf8')).toBe(await generateOpenApi());
  });

  it('the OpenAPI document covers every function', async () => {
    const doc = JSON.parse(await generateOpenApi()) as { paths: Record<string, Record<string, unknown>> };
    for (const f of allFunctions) {
      const p = f.mount === 'functions' ? `/functions/v1/${f.name}` : `/${f.name}`;
      expect(Object.keys(doc.paths[p] ?? {})).toContain(f.method.toLowerCase());
    }
  });
});
