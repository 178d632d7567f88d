import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILD_COMMAND, GENERATED_FILE, generateConsoleModule, writeStaticConsole } from '../packages/console/src/build.ts';
import { CONSOLE_CSP } from '../packages/console/src/serve.ts';
import { createTestEnv, type TestEnv } from './support/app.ts';

/**
 * The console as the Node host serves it at /console/: the committed build is what the sources
 * produce, the page runs nothing inline (so the CSP needs no 'unsafe-inline'), every file carries the
 * CSP, and the first load stays within its compressed budget. Its behaviour in a browser is
 * tests/console-browser.test.ts.
 */
const BUDGET_GZIP_BYTES = 150 * 1024;

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(async () => {
  await env?.close();
});

const get = (path: string, headers: Record<string, string> = {}) => env.app.request(`http://localhost${path}`, { headers });

describe('the console, as served', () => {
  it(`the committed build is fresh (run \`${BUILD_COMMAND}\` after changing packages/console/src)`, async () => {
    expect(await readFile(GENERATED_FILE, 'utf8')).toBe(await generateConsoleModule());
  }, 60_000);

  it('/console sends the browser to /console/, whose page names its API and runs nothing inline', async () => {
    const bare = await get('/console');
    expect(bare.status).toBe(308);
    expect(bare.headers.get('location')).toBe('/console/');
    const res = await get('/console/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain('<meta name="sightline-api" content="/functions/v1">');
    // Every script has a src, no <style> element, no style attribute, no inline handler.
    expect(html.match(/<script\b[^>]*>/g)?.every((tag) => /\bsrc="app\.js\?v=\w+"/.test(tag))).toBe(true);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
  });

  it('every file carries the strict CSP: own script and style only, own origin for calls, no framing', async () => {
    for (const file of ['', 'app.js', 'app.css']) {
      const res = await get(`/console/${file}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
    expect(CONSOLE_CSP).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    // Only images come from elsewhere (a partner's logo), and only over https.
    expect(CONSOLE_CSP.split('; ').filter((d) => /https?:/.test(d))).toEqual(["img-src 'self' https:"]);
    expect(CONSOLE_CSP).toMatch(/script-src 'self'/);
    expect(CONSOLE_CSP).toMatch(/frame-ancestors 'none'/);
  });

  it(`the first load is at most ${BUDGET_GZIP_BYTES / 1024} KB of compressed JavaScript, as served`, async () => {
    const html = await (await get('/console/')).text();
    const scripts = [...html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(scripts.length).toBeGreaterThan(0);
    let served = 0;
    for (const src of scripts) {
      const res = await get(`/console/${src}`, { 'accept-encoding': 'gzip, br' });
      expect(res.headers.get('content-encoding')).toBe('gzip');
      const bytes = Buffer.from(await res.arrayBuffer());
      served += bytes.length;
      // What came compressed is the script itself.
      expect(gunzipSync(bytes).toString('utf8').length).toBeGreaterThan(1000);
    }
    console.log(`console: ${served} bytes of gzipped JavaScript served on first load; budget ${BUDGET_GZIP_BYTES}`);
    expect(served).toBeLessThanOrEqual(BUDGET_GZIP_BYTES);
  });

  it('a file the console does not have is a 404 in the envelope', async () => {
    const res = await get('/console/secret.txt');
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ success: false, code: 'not_found' });
  });

  it('builds as static files, with the API base URL as its one setting', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'console-'));
    try {
      await writeStaticConsole(dir, 'https://api.example.com/functions/v1');
      const html = await readFile(path.join(dir, 'index.html'), 'utf8');
      expect(html).toContain('<meta name="sightline-api" content="https://api.example.com/functions/v1">');
      expect((await readFile(path.join(dir, 'app.js'), 'utf8')).length).toBeGreaterThan(1000);
      expect((await readFile(path.join(dir, 'app.css'), 'utf8')).length).toBeGreaterThan(100);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
