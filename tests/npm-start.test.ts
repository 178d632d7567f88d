import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase, type TestDatabase, usingPostgres } from './support/db.ts';
import { admin, childEnv, REPO_ROOT, run, type StartedServer, startHost } from './support/process.ts';

/**
 * The README's promise, over real sockets: `npm start` on an empty data directory prints a demo
 * partner key, the documented curl examples work (a visitor identified end to end included), the admin CLI works while the server runs and
 * after it stops, and the data (and server secret) survive a restart.
 */
let dataDir: string;
let server: StartedServer | undefined;
let env: NodeJS.ProcessEnv;
let demoKey = '';

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'sightline-start-'));
  // As the README's try-it starts it: curl plays a trusted proxy in front of a visitor at a public address.
  env = childEnv({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', TRUSTED_PROXIES: '127.0.0.1/32' });
  server = await startHost(env);
  demoKey = /\n {2}(sl_[0-9A-Za-z]{38})\n/.exec(server.stdout())?.[1] ?? '';
});
afterAll(async () => {
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

const base = () => `http://127.0.0.1:${server?.port}/functions/v1`;

// Each admin call and restart is a whole tsx process starting cold; on a busy 2-core machine one takes
// seconds, so these tests get more than the suite's default 30 s.
describe('npm start on the embedded default', { timeout: 90_000 }, () => {
  it('prints the demo partner key once, with a curl example', () => {
    expect(demoKey).toMatch(/^sl_/);
    expect(server?.stdout()).toContain(`curl -s http://localhost:${server?.port}/functions/v1/partner-pool-state -H "x-access-key: ${demoKey}"`);
  });

  it('keeps the server secret in the data directory, readable by the owner only', async () => {
    const s = await stat(path.join(dataDir, 'server-secret'));
    expect(s.mode & 0o077).toBe(0);
    expect((await readFile(path.join(dataDir, 'server-secret'), 'utf8')).trim().length).toBeGreaterThanOrEqual(32);
  });

  it('serves the demo partner’s pool over a real socket', async () => {
    const res = await fetch(`${base()}/partner-pool-state`, { headers: { 'x-access-key': demoKey } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { pool: { monthly_id_quota: number } };
    expect(body.pool.monthly_id_quota).toBe(1000);
  });

  it('runs the README’s curl examples as written', async () => {
    const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/```sh\n(# try-it[\s\S]*?)```/g)].map((m) => m[1] ?? '');
    expect(blocks.length).toBeGreaterThanOrEqual(1);
    const script = blocks.join('\n').replaceAll('localhost:8787', `127.0.0.1:${server?.port}`);
    const res = await run('bash', ['-euo', 'pipefail', '-c', script], { ...env, KEY: demoKey });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const answers = res.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { success: boolean; visitors?: { domain: string }[] });
    expect(answers.length).toBeGreaterThanOrEqual(3);
    // An IP lookup result has no `success` field (spec); every other answer says success.
    const isLookup = (a: object) => 'traffic_type' in a;
    const lookups = answers.filter(isLookup);
    expect(answers.filter((a) => !isLookup(a)).every((a) => a.success)).toBe(true);
    // The demo partner has lookup credits: the README's ip-to-company names the company, not 402.
    expect(lookups).toEqual([expect.objectContaining({ identified: true, traffic_type: 'business', domain: 'ford.com' })]);
    // The visitor walked end to end: its beacon aggregated, identified and listed for the child's key.
    expect(answers.at(-1)?.visitors?.map((v) => v.domain)).toEqual(['apple.com']);
  });

  it('runs admin commands through the running server (it owns the PGlite files)', async () => {
    const acct = await admin(['create-account', '--name', 'Acme', '--domain', 'acme-e2e.example.com'], env);
    expect(acct.code).toBe(0);
    const out = JSON.parse(acct.stdout) as Record<string, string>;
    expect(Object.keys(out).sort()).toEqual(['account_id', 'api_key_id', 'key', 'tracking_script_id', 'website_id']);

    const partner = await admin(['create-partner', '--name', 'Agency', '--quota', '50', '--topup', '5'], env);
    expect(partner.code).toBe(0);
    const p = JSON.parse(partner.stdout) as { key: string; account_id: string; api_key_id: string };
    const res = await fetch(`${base()}/partner-pool-state`, { headers: { 'x-access-key': p.key } });
    expect(((await res.json()) as { pool: { available: number } }).pool.available).toBe(55);

    const own = await admin(['create-key', '--account-id', p.account_id, '--domain', 'agency-own.example.com'], env);
    expect(own.code).toBe(0);
    expect(Object.keys(JSON.parse(own.stdout) as object).sort()).toEqual(['api_key_id', 'key', 'tracking_script_id', 'website_id']);
  });

  it('reports bad admin input as one JSON error line and exit code 1', async () => {
    const res = await admin(['create-partner', '--quota', 'many'], env);
    expect(res.code).toBe(1);
    expect(JSON.parse(res.stderr) as object).toMatchObject({ success: false });
    expect(res.stderr).toMatch(/--name is required/);
    const unknown = await admin(['create-partner', '--name', 'x', '--colour', 'red'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/colour/);
  });

  it('stops cleanly, then the CLI opens the data directory itself, and a restart keeps keys valid', async () => {
    expect(await server?.stop()).toBe(0);
    expect(existsSync(path.join(dataDir, 'server.json'))).toBe(false);
    const direct = await admin(['create-account', '--name', 'Offline', '--domain', 'offline-e2e.example.com'], env);
    expect(direct.code).toBe(0);

    server = await startHost(env);
    expect(server.stdout()).not.toMatch(/demo partner/);
    const res = await fetch(`${base()}/partner-pool-state`, { headers: { 'x-access-key': demoKey } });
    expect(res.status).toBe(200);
  });
});

/**
 * A first `npm start` against an empty production database must not create a live partner and
 * print its key: the demo partner belongs to the embedded default unless asked for.
 */
describe.skipIf(!usingPostgres)('npm start against an empty Postgres database', () => {
  let database: TestDatabase | undefined;
  afterAll(async () => database?.drop());

  it('creates no demo partner unless DEMO_PARTNER=1', async () => {
    database = await openTestDatabase({ pool: 1 });
    await database.db.close();
    const pgEnv = childEnv({
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: database.url ?? '',
      SIGHTLINE_SECRET: 'a-test-server-secret-of-at-least-32-chars',
      IP_DATA: '0',
    });
    const plain = await startHost(pgEnv);
    await plain.stop();
    expect(plain.stdout()).not.toMatch(/demo partner|sl_[0-9A-Za-z]{38}/);
    const sql = postgres(database.url ?? '', { max: 1, onnotice: () => {} });
    try {
      expect((await sql`select count(*)::int as n from accounts`)[0]?.n).toBe(0);
      const asked = await startHost({ ...pgEnv, DEMO_PARTNER: '1' });
      await asked.stop();
      expect(asked.stdout()).toMatch(/demo partner/);
      expect((await sql`select count(*)::int as n from accounts where is_partner`)[0]?.n).toBe(1);
    } finally {
      await sql.end();
    }
  });
});
