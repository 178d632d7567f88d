import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { buildDeps, parseEnv } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { DENO, envForDeno } from './support/deno-functions.ts';
import { REPO_ROOT } from './support/process.ts';
import { seedDirectAccount } from './support/seed.ts';

/**
 * Where connect links point is configuration, PUBLIC_BASE_URL, read once at the entry point: never
 * the request's Host (the client's to write) or scheme (plain http behind a TLS-terminating proxy).
 * https is required except on a loopback host, which is what local development means here.
 */
describe('PUBLIC_BASE_URL', () => {
  it('is the spec’s {base_url} as clients reach it, without a trailing slash', () => {
    expect(parseEnv({ PUBLIC_BASE_URL: 'https://api.example.com/functions/v1/' }).PUBLIC_BASE_URL).toBe('https://api.example.com/functions/v1');
    expect(parseEnv({ PUBLIC_BASE_URL: 'https://API.Example.com:8443' }).PUBLIC_BASE_URL).toBe('https://api.example.com:8443');
    expect(parseEnv({}).PUBLIC_BASE_URL).toBeUndefined();
    expect(parseEnv({ PUBLIC_BASE_URL: '' }).PUBLIC_BASE_URL).toBeUndefined();
  });

  it('refuses plain http for a public host, naming the rule', () => {
    for (const url of ['http://api.example.com/functions/v1', 'http://10.0.0.5:8787', 'http://evil.localhost.example.com']) {
      expect(() => parseEnv({ PUBLIC_BASE_URL: url }), url).toThrow(
        /PUBLIC_BASE_URL: PUBLIC_BASE_URL must be an https:\/\/ URL \(plain http only for localhost, 127\.0\.0\.0\/8 or \[::1\] in local development\)/,
      );
    }
  });

  it('allows plain http on a loopback host: local development', () => {
    for (const url of ['http://localhost:8787/functions/v1', 'http://127.0.0.1:8787/functions/v1', 'http://[::1]:8787', 'http://app.localhost']) {
      expect(parseEnv({ PUBLIC_BASE_URL: url }).PUBLIC_BASE_URL, url).toBe(url);
    }
  });

  it('refuses what is not a plain address: not a URL, another scheme, credentials, a query or fragment', () => {
    expect(() => parseEnv({ PUBLIC_BASE_URL: 'api.example.com' })).toThrow(/PUBLIC_BASE_URL must be an absolute URL/);
    expect(() => parseEnv({ PUBLIC_BASE_URL: 'ftp://api.example.com' })).toThrow(/PUBLIC_BASE_URL must be an https:\/\/ URL/);
    expect(() => parseEnv({ PUBLIC_BASE_URL: 'https://user:pw@api.example.com' })).toThrow(/must not contain a user name or password/);
    expect(() => parseEnv({ PUBLIC_BASE_URL: 'https://api.example.com/v1?x=1' })).toThrow(/must not have a query or fragment/);
    expect(() => parseEnv({ PUBLIC_BASE_URL: 'https://api.example.com/v1#top' })).toThrow(/must not have a query or fragment/);
  });
});

describe('the entry points', () => {
  let env: TestEnv | undefined;
  let dataDir: string | undefined;
  let key = '';

  beforeAll(async () => {
    // PGlite admits one process at a time: seed here, close, and let Deno open the directory.
    ({ env, dataDir } = await envForDeno('public-base-url'));
    key = (await seedDirectAccount(env.deps, 'Public address')).key;
  }, 60_000);
  afterAll(async () => {
    await env?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('core’s buildDeps, which both hosts use, hands the setting to the verbs', async () => {
    const db = env?.db;
    if (!db) throw new Error('no database');
    const deps = await buildDeps(parseEnv({ PUBLIC_BASE_URL: 'https://api.example.com/functions/v1/', IP_DATA: '0' }), {
      db,
      secret: TEST_SECRET,
      log: { debug() {}, info() {}, warn() {}, error() {} },
      webhooks: { request: () => Promise.reject(new Error('no webhooks here')) },
      listens: false,
    });
    expect(deps.publicBaseUrl).toBe('https://api.example.com/functions/v1');
  });

  /** tests/deno/connect-link-url.ts under Deno: the Supabase entry's configuration and the route, one request. */
  async function underDeno(publicBaseUrl: string) {
    if (!usingPostgres && env) {
      await env.close();
      env = undefined;
    }
    const database = usingPostgres ? { DATABASE_URL: String(env?.url) } : { PGLITE_DIR: String(dataDir) };
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !['DATABASE_URL', 'SUPABASE_DB_URL', 'PGLITE_DIR', 'REDIS_URL', 'PUBLIC_BASE_URL'].includes(k)),
    );
    return promisify(execFile)(DENO, ['run', '--allow-all', '--config', 'deno.json', 'tests/deno/connect-link-url.ts'], {
      cwd: REPO_ROOT,
      timeout: 90_000,
      env: { ...inherited, ...database, SIGHTLINE_SECRET: TEST_SECRET, PUBLIC_BASE_URL: publicBaseUrl, TEST_KEY: key, IP_DATA: '0', NO_COLOR: '1' },
    });
  }

  it('the Supabase entry links to PUBLIC_BASE_URL for a request with a forged Host, and refuses plain http for a public host at start', async () => {
    const { stdout } = await underDeno('https://abc.supabase.co/functions/v1');
    const answer = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { status: number; body: { token: string; url: string } };
    expect(answer.status).toBe(201);
    expect(answer.body.url).toBe(`https://abc.supabase.co/functions/v1/connect#token=${answer.body.token}`);
    await expect(underDeno('http://abc.supabase.co/functions/v1')).rejects.toMatchObject({
      stderr: expect.stringMatching(/PUBLIC_BASE_URL must be an https:\/\/ URL/),
    });
  }, 180_000);
});
