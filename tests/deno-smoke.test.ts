import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantCredits, migrate } from '@sightline/core';
import { loadMigrations, openPglite } from '@sightline/host';
import { buildEdgeData } from '../packages/host/src/edge-data.ts';
import { call, createTestEnv, envForDatabase, TEST_SECRET, type Json, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { seedDirectAccount, seedPartner } from './support/seed.ts';

/**
 * The Supabase entrypoints run the same core under Deno, where modules resolve through npm:
 * specifiers and crypto, the HTTP server and the database drivers are Deno's. This serves
 * partner-pool-state under Deno against the database the Node app reads, and requires the same
 * answers.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DENO = join(ROOT, 'node_modules/.bin/deno');
const SCRIPT = 'tests/deno/serve-function.ts';
const STARTUP_TIMEOUT_MS = 60_000;
const SHUTDOWN_TIMEOUT_MS = 10_000;

interface Answer {
  status: number;
  body: Json;
  allow: string | null;
}

interface DenoServer {
  origin: string;
  /** SIGTERM, then the exit; rejects (after making sure the process is gone) unless it exits 0. */
  stop(): Promise<void>;
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function startDeno(dbEnv: ({ DATABASE_URL: string } | { PGLITE_DIR: string }) & { IP_DATA_DIR: string }): Promise<DenoServer> {
  // Only the database the test chose may reach the child, never one inherited from the shell.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !['DATABASE_URL', 'SUPABASE_DB_URL', 'PGLITE_DIR', 'PORT', 'REDIS_URL', 'IP_DATA_DIR'].includes(k)),
  );
  const child = spawn(DENO, ['run', '--allow-all', '--config', 'deno.json', SCRIPT], {
    cwd: ROOT,
    env: { ...inherited, ...dbEnv, PORT: '0', SIGHTLINE_SECRET: TEST_SECRET, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));

  const kill = async () => {
    if (exited(child)) return;
    child.kill('SIGKILL');
    await waitForExit(child, SHUTDOWN_TIMEOUT_MS);
  };

  const port = await new Promise<number>((resolve, reject) => {
    const fail = (why: string) => {
      cleanup();
      reject(new Error(`Deno server ${why}.\n--- stderr ---\n${stderr}\n--- stdout ---\n${stdout}`));
    };
    const onData = () => {
      const m = /^listening (\d+)$/m.exec(stdout);
      if (m?.[1]) {
        cleanup();
        resolve(Number(m[1]));
      }
    };
    // 'close', not 'exit': it waits for stdio to drain, so the error carries all of Deno's stderr.
    const onClose = (code: number | null, signal: string | null) => fail(`exited before listening (code ${code}, signal ${signal})`);
    const onError = (err: Error) => fail(`could not be spawned: ${err.message}`);
    const timer = setTimeout(() => fail(`did not report a port within ${STARTUP_TIMEOUT_MS / 1000} s`), STARTUP_TIMEOUT_MS);
    function cleanup() {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('close', onClose);
      child.off('error', onError);
    }
    child.stdout?.on('data', onData);
    child.once('close', onClose);
    child.once('error', onError);
  }).catch(async (err: unknown) => {
    await kill();
    throw err;
  });

  return {
    origin: `http://127.0.0.1:${port}`,
    async stop() {
      if (exited(child)) throw new Error(`Deno server died early (code ${child.exitCode}):\n${stderr}`);
      child.kill('SIGTERM');
      if (!(await waitForExit(child, SHUTDOWN_TIMEOUT_MS))) {
        await kill();
        throw new Error(`Deno server ignored SIGTERM for ${SHUTDOWN_TIMEOUT_MS / 1000} s and was killed:\n${stderr}`);
      }
      if (child.exitCode !== 0) throw new Error(`Deno server exited with ${child.exitCode ?? child.signalCode} on SIGTERM:\n${stderr}`);
    },
  };
}

/**
 * The embedded default has no URL a second process could use, so the data lives in a directory
 * instead of memory; PGlite allows one process at a time, hence Node must close before Deno opens.
 */
async function createPgliteDirEnv(dir: string): Promise<TestEnv> {
  const db = await openPglite(dir);
  await migrate(db, await loadMigrations());
  return envForDatabase({ db, url: undefined, drop: () => db.close() });
}

async function fromNode(env: TestEnv, opts: Parameters<typeof call>[2]): Promise<Answer> {
  const res = await call(env, 'partner-pool-state', opts);
  return { status: res.status, body: res.body, allow: res.headers.get('allow') };
}

async function fromDeno(server: DenoServer, init: { key?: string; method?: string }): Promise<Answer> {
  const res = await fetch(`${server.origin}/partner-pool-state`, {
    method: init.method ?? 'GET',
    headers: init.key === undefined ? {} : { 'x-access-key': init.key },
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: (await res.json()) as Json, allow: res.headers.get('allow') };
}

let env: TestEnv | undefined;
let dataDir: string | undefined;
let ipDataDir: string | undefined;
let deno: DenoServer | undefined;
let key = '';
let lookupKey = '';

/** The server beforeAll started; a test reaching here without one has nothing to compare against. */
function running(): DenoServer {
  if (!deno) throw new Error('the Deno server did not start (see beforeAll)');
  return deno;
}
const node: Record<'state' | 'noKey' | 'post', Answer | undefined> = { state: undefined, noKey: undefined, post: undefined };

beforeAll(async () => {
  if (usingPostgres) {
    env = await createTestEnv();
  } else {
    dataDir = await mkdtemp(join(tmpdir(), 'sightline-deno-smoke-'));
    env = await createPgliteDirEnv(dataDir);
  }
  // Every field non-default, including sub-millisecond timestamps and a numeric, so a driver
  // difference in decoding shows up as a diff rather than hiding behind nulls and zeros.
  const partner = await seedPartner(env.deps, { quota: 40, topup: 25, billing: 'invoice_monthly', perIdPence: 1.25, card: 'pm_smoke' });
  await env.db`update pools set ids_used_this_period = 47, auto_reload_enabled = true, auto_reload_threshold_ids = 5,
                 auto_reload_topup_amount_ids = 50, consecutive_declines = 2,
                 last_declined_at = '2024-03-05T06:07:08.123456Z'
               where account_id = ${partner.account_id}`;
  key = partner.key;
  const direct = await seedDirectAccount(env.deps, 'Deno lookups');
  await grantCredits({ ctx: env.deps, input: { accountId: direct.account_id, credits: 10 } });
  lookupKey = direct.key;
  // The IP data as the Supabase functions ship it (npm run build:edge-data), in a directory of its own.
  ipDataDir = await mkdtemp(join(tmpdir(), 'sightline-deno-ip-data-'));
  await buildEdgeData(ipDataDir);
  node.state = await fromNode(env, { key });
  node.noKey = await fromNode(env, {});
  node.post = await fromNode(env, { method: 'POST' });
  if (dataDir) {
    await env.close();
    env = undefined;
    deno = await startDeno({ PGLITE_DIR: dataDir, IP_DATA_DIR: ipDataDir });
  } else {
    if (!env.url) throw new Error('createTestEnv returned no URL for a Postgres database');
    deno = await startDeno({ DATABASE_URL: env.url, IP_DATA_DIR: ipDataDir });
  }
}, 120_000);

afterAll(async () => {
  // Deno first: it holds connections to the database the Node env is about to drop.
  try {
    await deno?.stop();
  } finally {
    await env?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    if (ipDataDir) await rm(ipDataDir, { recursive: true, force: true });
  }
});

describe(`partner-pool-state under Deno (${usingPostgres ? 'Postgres' : 'embedded PGlite'})`, () => {
  it('the Deno entry script passes deno check', async () => {
    await expect(
      promisify(execFile)(DENO, ['check', '--quiet', '--config', 'deno.json', SCRIPT], { cwd: ROOT, timeout: 60_000 }),
    ).resolves.toBeDefined();
  });

  it('serves the same pool state as the Node host for the same partner key', async () => {
    expect(node.state?.status).toBe(200);
    expect(node.state?.body.success).toBe(true);
    const res = await fromDeno(running(), { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(node.state?.body);
  });

  it('rejects a missing key with the same 401 envelope as Node', async () => {
    const res = await fromDeno(running(), {});
    expect(res.status).toBe(401);
    expect(res.body.success).toBe(false);
    expect(typeof res.body.error).toBe('string');
    expect(res).toEqual(node.noKey);
  });

  it('reads request bodies from a web stream: JSON reaches the validator, oversized bodies get 413', async () => {
    const post = (body: string) =>
      fetch(`${running().origin}/partner-create-child-key`, {
        method: 'POST',
        headers: { 'x-access-key': key, 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(10_000),
      });
    const invalid = await post(JSON.stringify({ name: 'Deno body', domain: 'not a domain' }));
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as { error: string }).error).toMatch(/domain/);
    const big = await post(JSON.stringify({ name: 'x'.repeat(70_000), domain: 'big.example' }));
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: string }).error).toMatch(/at most 65536 bytes/);
  });

  it('rejects the wrong method with the same 405 and Allow as Node, before authentication', async () => {
    const res = await fromDeno(running(), { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.allow).toContain('GET');
    expect(res.body.success).toBe(false);
    expect(res).toEqual(node.post);
  });
});

describe('ip-to-company under Deno, from the edge data snapshot', () => {
  const lookup = async (ip: string) => {
    const res = await fetch(`${running().origin}/ip-to-company`, {
      method: 'POST',
      headers: { 'x-access-key': lookupKey, 'content-type': 'application/json' },
      body: JSON.stringify({ ip }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };

  it('identifies a company network and a VPN exit, IPv4 and IPv6, with the country, as the Node host does', async () => {
    const apple = await lookup('17.253.144.10');
    expect(apple.status, JSON.stringify(apple.body)).toBe(200);
    expect(apple.body).toMatchObject({ identified: true, domain: 'apple.com', traffic_type: 'business', country_code: 'US', cached: false });
    expect((await lookup('185.65.134.1')).body).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'Mullvad', country_code: 'NL' });
    const google6 = await lookup('2a00:1450:4001:800::200e');
    expect(google6.body).toMatchObject({ traffic_type: 'hosting', country_code: expect.stringMatching(/^[A-Z]{2}$/) as unknown });
    // The repeat is the stored result, and only the business match was charged.
    expect((await lookup('17.253.144.10')).body).toMatchObject({ cached: true, domain: 'apple.com' });
  });
});
