import { readFile } from 'node:fs/promises';
import { Script } from 'node:vm';
import { gzipSync } from 'node:zlib';
import { COLLECT_PATH, renderTrackerScript } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRACKER_SCRIPT_HEAD, TRACKER_SCRIPT_TAIL } from '../packages/core/src/tracker/script.generated.ts';
import { BUILD_COMMAND, GENERATED_FILE, generateTrackerModule } from '../packages/tracker/src/build.ts';
import { call, createTestEnv, type TestEnv } from './support/app.ts';

/**
 * The tracker script as the server hands it out: built from packages/tracker and committed fresh,
 * within its size budget, per site (configured by the server) or generic, cacheable with a strong
 * ETag, and configured safely whatever the configuration holds.
 */
const BUDGET_GZIP_BYTES = 1536;
const ID = '6f1c1c84-8a1e-4a4e-9d0e-3c1c2f9a7b10';

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(() => env.close());

/** The configuration the served script carries: the JSON between the generated head and tail. */
function configOf(script: string): unknown {
  expect(script.startsWith(TRACKER_SCRIPT_HEAD)).toBe(true);
  expect(script.endsWith(TRACKER_SCRIPT_TAIL)).toBe(true);
  // Evaluated as the browser would read it, as a JavaScript expression (not JSON.parse).
  return new Script(`(${script.slice(TRACKER_SCRIPT_HEAD.length, script.length - TRACKER_SCRIPT_TAIL.length)})`).runInNewContext({});
}

describe('the built script', () => {
  it(`is the committed one (run \`${BUILD_COMMAND}\`)`, async () => {
    expect(await readFile(GENERATED_FILE, 'utf8')).toBe(await generateTrackerModule());
  });

  it(`is at most ${BUDGET_GZIP_BYTES} bytes gzipped, as served`, async () => {
    for (const file of [`${ID}.js`, 'tracker.js']) {
      const res = await call(env, `/t/${file}`);
      const bytes = Buffer.from(res.body.raw as string, 'utf8');
      const gzipped = gzipSync(bytes, { level: 9 }).length;
      console.log(`tracker ${file}: ${bytes.length} bytes, ${gzipped} bytes gzipped (level 9); budget ${BUDGET_GZIP_BYTES}`);
      expect(gzipped).toBeLessThanOrEqual(BUDGET_GZIP_BYTES);
    }
  });
});

describe('GET /t/<tracking_script_id>.js and /t/tracker.js', () => {
  it('serves the per-site file with the tracking id and the collect path filled in', async () => {
    const res = await call(env, `/t/${ID}.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{32}"$/);
    expect(configOf(res.body.raw as string)).toEqual({ i: ID, a: COLLECT_PATH });
    // A script element cannot be ended from inside, and it parses as a whole.
    expect(() => new Script(res.body.raw as string)).not.toThrow();
  });

  it('serves the generic file with the collect path only (it reads data-id from its tag)', async () => {
    const res = await call(env, '/t/tracker.js');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(configOf(res.body.raw as string)).toEqual({ a: COLLECT_PATH });
  });

  it('serves any well-formed id, known or not, so the URL cannot tell which sites exist; one spelling per id', async () => {
    const unknown = crypto.randomUUID();
    const res = await call(env, `/t/${unknown}.js`);
    expect(res.status).toBe(200);
    expect(configOf(res.body.raw as string)).toEqual({ i: unknown, a: COLLECT_PATH });
    const upper = await call(env, `/t/${unknown.toUpperCase()}.js`);
    expect(upper.body.raw).toBe(res.body.raw);
    expect(upper.headers.get('etag')).toBe(res.headers.get('etag'));
  });

  it('answers 400 in the envelope for any other file name', async () => {
    for (const file of ['x.js', 'tracker.mjs', `${ID}`, `${ID}.js.map`, '%3Cscript%3E.js', `${ID.slice(1)}.js`, '..%2Ft%2Ftracker.js']) {
      const res = await call(env, `/t/${file}`);
      expect(res.status, file).toBe(400);
      expect(res.body).toEqual({ success: false, error: expect.stringMatching(/^file: /) as unknown, code: 'invalid_request' });
    }
    expect((await call(env, '/t/tracker.js/extra')).status).toBe(404);
  });

  it('gives each file its own strong ETag, and answers 304 without a body to a matching If-None-Match', async () => {
    const site = await call(env, `/t/${ID}.js`);
    const generic = await call(env, '/t/tracker.js');
    const etag = site.headers.get('etag') as string;
    expect(etag).not.toBe(generic.headers.get('etag'));
    expect(etag.startsWith('W/')).toBe(false);
    for (const ifNoneMatch of [etag, `W/${etag}`, `"stale", ${etag}`, '*']) {
      const res = await env.app.request(`http://localhost/t/${ID}.js`, { headers: { 'if-none-match': ifNoneMatch } });
      expect(res.status, ifNoneMatch).toBe(304);
      expect(await res.text()).toBe('');
      expect(res.headers.get('etag')).toBe(etag);
      expect(res.headers.get('cache-control')).toBe('public, max-age=86400');
    }
    const stale = await env.app.request(`http://localhost/t/${ID}.js`, { headers: { 'if-none-match': generic.headers.get('etag') as string } });
    expect(stale.status).toBe(200);
    expect(await stale.text()).toBe(site.body.raw);
  });

  it('answers HEAD, refuses other methods with 405, and may be loaded with crossorigin (CORS, CORP)', async () => {
    const head = await env.app.request(`http://localhost/t/${ID}.js`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('access-control-allow-origin')).toBe('*');
    expect(head.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    const post = await call(env, '/t/tracker.js', { method: 'POST', body: {} });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toContain('GET');
  });
});

describe('configuration injection', () => {
  const odd = [
    '</script><script>alert(1)</script>',
    '"};alert(1);//',
    "'+alert(1)+'",
    'line\u2028separator\u2029',
    '<!-- <script>',
    '\u0024{alert(1)}\u0060', // ${…} and a backquote
    '\\u0022',
    'ü & > <',
  ];

  it.each(odd.map((v) => [v]))('carries %j as that string and nothing else', (value) => {
    const script = renderTrackerScript({ trackingScriptId: value, collectPath: `/x/${value}` });
    expect(configOf(script)).toEqual({ i: value, a: `/x/${value}` });
    expect(() => new Script(script)).not.toThrow();
    // Nothing that could close the element or start markup inside an inline <script>.
    expect(script.slice(TRACKER_SCRIPT_HEAD.length)).not.toMatch(/<\/|<!--|[\u2028\u2029]/);
  });
});
