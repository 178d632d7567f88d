import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseEnv } from '@sightline/core';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeStaticConsole } from '../packages/console/src/build.ts';
import { createTestEnv, fn, type TestEnv } from './support/app.ts';
import { CHROMIUM, chromiumFor, type LoopbackHost, startLoopbackHost } from './support/browser.ts';
import { seedPartner } from './support/seed.ts';

/**
 * The console hosted apart from the API (CONSOLE_ORIGINS): the key endpoints answer a listed
 * origin's preflight and carry that origin on their answers; any other origin, and every origin
 * when the setting is empty, gets no CORS at all. Then the static console itself, served from one
 * 127.0.0.1 port, signs in against the API on another, in Chromium.
 */
const haveChromium = chromiumFor('console-cors');
const CONSOLE_ORIGIN = 'https://console.agency.example';
let env: TestEnv;
let plain: TestEnv;
let staticServer: Server | undefined;
let apiHost: LoopbackHost | undefined;
let dir = '';

beforeAll(async () => {
  env = await createTestEnv({ settings: { CONSOLE_ORIGINS: `${CONSOLE_ORIGIN}, http://127.0.0.1:1` } });
  plain = await createTestEnv();
}, 60_000);
afterAll(async () => {
  await env?.close();
  await plain?.close();
  await new Promise((r) => staticServer?.close(r) ?? r(null));
  await apiHost?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const preflight = (e: TestEnv, origin: string) =>
  e.app.request(fn('partner-pool-state'), {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-access-key' },
  });

describe('CONSOLE_ORIGINS', () => {
  it('answers a listed origin’s preflight and carries the origin on answers, errors included', async () => {
    const pre = await preflight(env, CONSOLE_ORIGIN);
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(CONSOLE_ORIGIN);
    expect(pre.headers.get('access-control-allow-headers')).toContain('x-access-key');
    expect(pre.headers.get('access-control-allow-methods')).toBe('GET');
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
    const partner = await seedPartner(env.deps, { quota: 10 });
    const ok = await env.app.request(fn('partner-pool-state'), { headers: { origin: CONSOLE_ORIGIN, 'x-access-key': partner.key } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(CONSOLE_ORIGIN);
    expect(ok.headers.get('access-control-expose-headers')).toContain('x-request-id');
    const refused = await env.app.request(fn('partner-pool-state'), { headers: { origin: CONSOLE_ORIGIN, 'x-access-key': 'sk_wrong' } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(CONSOLE_ORIGIN);
  });

  it('gives another origin, and every origin when unset, nothing to read', async () => {
    const other = await preflight(env, 'https://evil.example');
    expect(other.status).toBe(405);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const unset = await preflight(plain, CONSOLE_ORIGIN);
    expect(unset.status).toBe(405);
    expect(unset.headers.get('access-control-allow-origin')).toBeNull();
    const partner = await seedPartner(plain.deps, { quota: 10 });
    const answer = await plain.app.request(fn('partner-pool-state'), { headers: { origin: CONSOLE_ORIGIN, 'x-access-key': partner.key } });
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses at start-up what is not an origin', () => {
    for (const bad of ['console.example.com', 'https://console.example.com/app', 'http://console.example.com', 'ftp://x.example']) {
      expect(() => parseEnv({ CONSOLE_ORIGINS: bad }), bad).toThrow(/CONSOLE_ORIGINS/);
    }
    expect(parseEnv({ CONSOLE_ORIGINS: 'https://a.example, http://localhost:5173' }).CONSOLE_ORIGINS).toEqual([
      'https://a.example',
      'http://localhost:5173',
    ]);
  });
});

describe.skipIf(!haveChromium)('the static console on another origin', () => {
  it('signs in against the API on another port and shows the partner view', async () => {
    // The API on one port, the console's files on another: two origins.
    dir = await mkdtemp(path.join(tmpdir(), 'console-static-'));
    staticServer = http.createServer();
    await new Promise<void>((resolve) => staticServer?.listen(0, '127.0.0.1', resolve));
    const consoleOrigin = `http://127.0.0.1:${(staticServer.address() as AddressInfo).port}`;
    const api = await createTestEnv({ settings: { CONSOLE_ORIGINS: consoleOrigin } });
    try {
      apiHost = await startLoopbackHost({ log: api.deps.log, fetch: (req, bindings) => api.app.fetch(req, bindings) });
      const apiOrigin = `http://127.0.0.1:${apiHost.port}`;
      await writeStaticConsole(dir, `${apiOrigin}/functions/v1`);
      const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
      staticServer.on('request', async (req, res) => {
        const at = (req.url ?? '/').split('?')[0] ?? '/';
        const name = at === '/' ? 'index.html' : at.replace(/^\//, '');
        try {
          const body = await readFile(path.join(dir, path.basename(name)));
          res.writeHead(200, {
            'content-type': types[path.extname(name)] ?? 'application/octet-stream',
            'content-security-policy': `default-src 'self'; connect-src 'self' ${apiOrigin}; img-src https:`,
          });
          res.end(body);
        } catch {
          res.writeHead(404).end();
        }
      });
      const partner = await seedPartner(api.deps, { quota: 100 });
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
      try {
        const page = await browser.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(e.message));
        await page.goto(`${consoleOrigin}/`);
        await page.getByLabel('API key').fill(partner.key);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { name: 'Pool' }).waitFor({ timeout: 15_000 });
        expect(errors).toEqual([]);
      } finally {
        await browser.close();
      }
    } finally {
      await api.close();
    }
  }, 90_000);
});
