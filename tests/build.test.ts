import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildHost } from '../packages/host/src/build.ts';
import { BUILT_MAIN, childEnv, run, type StartedServer, startHost } from './support/process.ts';

/**
 * The production path: `npm run build` bundles the host to plain JavaScript and `npm run serve` runs
 * it under node without tsx. Served for real on the embedded default, with the local IP data.
 */
let dataDir: string;
let server: StartedServer | undefined;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  const files = await buildHost();
  expect(files.map((f) => path.basename(f)).sort()).toEqual(['admin.mjs', 'main.mjs']);
  dataDir = await mkdtemp(path.join(tmpdir(), 'sightline-built-'));
  env = childEnv({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' });
  server = await startHost(env, 60_000, { entry: BUILT_MAIN });
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('the built host (npm run build && npm run serve)', () => {
  it('bundles postgres.js with its queue replaced by postgres-queue.ts', async () => {
    const map = JSON.parse(await readFile('packages/host/dist/main.mjs.map', 'utf8')) as { sources: string[] };
    expect(map.sources.some((s) => s.endsWith('node_modules/postgres/src/connection.js'))).toBe(true);
    expect(map.sources.some((s) => s.endsWith('packages/host/src/postgres-queue.ts') || s === '../src/postgres-queue.ts')).toBe(true);
    expect(map.sources.filter((s) => s.endsWith('node_modules/postgres/src/queue.js'))).toEqual([]);
  });

  it('serves the functions with the demo partner key it prints', async () => {
    const key = /\n {2}(sl_[0-9A-Za-z]{38})\n/.exec(server?.stdout() ?? '')?.[1];
    expect(key).toMatch(/^sl_/);
    const res = await fetch(`http://127.0.0.1:${server?.port}/functions/v1/partner-pool-state`, { headers: { 'x-access-key': key as string } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ success: true });
  });

  it('answers from the local IP data it loaded at start', async () => {
    const out = await run(process.execPath, ['packages/host/dist/admin.mjs', 'create-account', '--name', 'Built', '--domain', 'built.example'], env);
    expect(out.code, out.stderr).toBe(0);
    const key = /sl_[0-9A-Za-z]{38}/.exec(out.stdout)?.[0] as string;
    const res = await fetch(`http://127.0.0.1:${server?.port}/functions/v1/ip-to-company`, {
      method: 'POST',
      headers: { 'x-access-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ ip: '185.65.134.1' }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ip: '185.65.134.1', traffic_type: 'vpn', vpn_provider: 'Mullvad' });
  });
});
