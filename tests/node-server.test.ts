import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { allowedMethodsAt, createHostApp, createNodeServer, nodeRequestHeaders } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { seedPartner } from './support/seed.ts';

/**
 * What a client gets when its request is broken before the app can read it — Node's parser, the
 * adapter's Host check, a body that never finishes — over real sockets: the same JSON envelope as
 * every other error, never an empty or text/plain answer, and never a connection held for minutes.
 */
let env: TestEnv;
let server: Server;
let port = 0;
let key = '';
const errors: string[] = [];

beforeAll(async () => {
  env = await createTestEnv({ log: { debug() {}, info() {}, warn() {}, error: (msg) => void errors.push(msg) } });
  key = (await seedPartner(env.deps, { quota: 10 })).key;
  // As the host builds it: headers read from Node's own parse (http/request-header.ts).
  const app = createHostApp({ ...env.deps, headersOf: nodeRequestHeaders }, { bodyTimeoutMs: 400 });
  server = createNodeServer({
    fetch: app.fetch,
    log: env.deps.log,
    allowedMethods: allowedMethodsAt,
    headersTimeoutMs: 600,
    requestTimeoutMs: 1_500,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await env.close();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** When the server closed the connection, in ms after the request was written. */
  closedAfterMs: number;
}

/** Writes raw bytes on a fresh connection and reads until the server closes it. */
function raw(request: string, { timeoutMs = 5_000 }: { timeoutMs?: number } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${timeoutMs} ms; got ${JSON.stringify(data)}`));
    }, timeoutMs);
    socket.on('connect', () => socket.write(request));
    socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const [head = '', body = ''] = data.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(':');
        if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1] ?? 0), headers, body, closedAfterMs: Date.now() - started });
    });
  });
}

/** The reason each status answered here carries: these statuses have one reason each. */
const CODE_OF: Record<number, string> = { 400: 'invalid_request', 405: 'method_not_allowed', 408: 'request_timeout', 431: 'headers_too_large' };

function expectEnvelope(answer: RawAnswer, status: number, message: RegExp) {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(answer.body) as { success: boolean; error: string; code: string };
  expect(body.success).toBe(false);
  expect(body.error).toMatch(message);
  expect(body.code).toBe(CODE_OF[status]);
}

const CREATE = '/functions/v1/partner-create-child-key';

describe('requests Node refuses before the app runs', () => {
  it('a Content-Length that is not a number is a 400 in the envelope', async () => {
    const a = await raw(`POST ${CREATE} HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n{}`);
    expectEnvelope(a, 400, /Content-Length/);
  });

  it('a method Node does not know is a 405 in the envelope, with Allow for a known function', async () => {
    const a = await raw('FROB /functions/v1/partner-pool-state HTTP/1.1\r\nHost: localhost\r\n\r\n');
    expectEnvelope(a, 405, /method/);
    expect(a.headers.allow).toBe('GET, HEAD');
    const post = await raw(`FROB ${CREATE} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    expect(post.headers.allow).toBe('POST');
    // A root function with a path parameter: the tracker script, with CORS (so OPTIONS too).
    const script = await raw('FROB /t/tracker.js HTTP/1.1\r\nHost: localhost\r\n\r\n');
    expectEnvelope(script, 405, /method/);
    expect(script.headers.allow).toBe('GET, HEAD, OPTIONS');
  });

  it('headers over 16 KiB are a 431 in the envelope', async () => {
    const a = await raw(`GET /functions/v1/partner-pool-state HTTP/1.1\r\nHost: localhost\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectEnvelope(a, 431, /headers are too large/);
  });

  it('a malformed Host is a 400 in the envelope, not an empty text/plain answer', async () => {
    const a = await raw('GET /functions/v1/partner-pool-state HTTP/1.1\r\nHost: exa mple.com\r\nConnection: close\r\n\r\n');
    expectEnvelope(a, 400, /host/i);
  });

  it('headers that never finish are cut off with a 408 after the headers timeout', async () => {
    const a = await raw('GET /functions/v1/partner-pool-state HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n');
    expectEnvelope(a, 408, /in time/);
    expect(a.closedAfterMs).toBeLessThan(4_000);
  });
});

describe('a body shorter than its Content-Length', () => {
  it('is answered 408 after the body timeout and the connection closed, not held', async () => {
    const body = '{"name":"x"';
    const a = await raw(
      `POST ${CREATE} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nx-access-key: ${key}\r\nContent-Length: ${body.length + 100}\r\n\r\n${body}`,
    );
    expectEnvelope(a, 408, /did not arrive within 0.4 s/);
    expect(a.headers.connection).toBe('close');
    expect(a.closedAfterMs).toBeGreaterThanOrEqual(350);
    expect(a.closedAfterMs).toBeLessThan(3_000);
  });

  it('is answered 408 on the web-stream path too (Deno, Supabase), where no Node socket is read', async () => {
    const app = createHostApp(env.deps, { bodyTimeoutMs: 300 });
    const stalledBody = new ReadableStream<Uint8Array>({
      start: (controller) => controller.enqueue(new TextEncoder().encode('{"name":')),
    });
    const started = Date.now();
    const res = await app.request(`http://localhost${CREATE}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': key },
      body: stalledBody,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(408);
    expect(((await res.json()) as { error: string }).error).toMatch(/did not arrive within 0.3 s/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('is not logged as a server error', () => {
    expect(errors).toEqual([]);
  });
});

describe('well-formed requests', () => {
  it('still reach the app over the same server', async () => {
    const a = await raw(`GET /functions/v1/partner-pool-state HTTP/1.1\r\nHost: localhost\r\nx-access-key: ${key}\r\nConnection: close\r\n\r\n`);
    expect(a.status).toBe(200);
    expect(a.body).toContain('"success":true');
  });

  it('read their headers from Node’s parse exactly as the web Headers path reads them', async () => {
    const cases: { name: string; method: string; path: string; headers: [string, string][]; body?: string }[] = [
      {
        name: 'key and request id',
        method: 'GET',
        path: '/functions/v1/partner-pool-state',
        headers: [
          ['X-Access-Key', key],
          ['X-Request-Id', 'trace-1.a'],
        ],
      },
      {
        name: 'a request id that is not one',
        method: 'GET',
        path: '/functions/v1/partner-pool-state',
        headers: [
          ['x-access-key', key],
          ['x-request-id', 'bad id!'],
        ],
      },
      {
        name: 'the key sent twice',
        method: 'GET',
        path: '/functions/v1/partner-pool-state',
        headers: [
          ['x-access-key', key],
          ['x-access-key', key],
        ],
      },
      { name: 'no key', method: 'GET', path: '/functions/v1/partner-pool-state', headers: [] },
      {
        name: 'a JSON route sent text/plain',
        method: 'POST',
        path: '/functions/v1/partner-set-webhook',
        headers: [
          ['x-access-key', key],
          ['content-type', 'text/plain'],
        ],
        body: '{}',
      },
      {
        name: 'a JSON route sent JSON',
        method: 'POST',
        path: '/functions/v1/partner-set-webhook',
        headers: [
          ['x-access-key', key],
          ['Content-Type', 'application/json; charset=utf-8'],
        ],
        body: '{"webhook_url":1}',
      },
    ];
    for (const c of cases) {
      const lines = c.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('');
      const length = c.body === undefined ? '' : `Content-Length: ${Buffer.byteLength(c.body)}\r\n`;
      const viaNode = await raw(`${c.method} ${c.path} HTTP/1.1\r\nHost: localhost\r\n${lines}${length}Connection: close\r\n\r\n${c.body ?? ''}`);
      const headers = new Headers();
      for (const [k, v] of c.headers) headers.append(k, v);
      const viaWeb = await env.app.request(`http://localhost${c.path}`, {
        method: c.method,
        headers,
        ...(c.body === undefined ? {} : { body: c.body }),
      });
      const webBody = await viaWeb.text();
      expect({ case: c.name, status: viaNode.status }).toEqual({ case: c.name, status: viaWeb.status });
      const withoutIds = (text: string) => text.replace(/"(request_id|current_period_(start|end)|created_at)":"[^"]*"/g, '');
      expect(withoutIds(viaNode.body)).toBe(withoutIds(webBody));
      if (c.name === 'key and request id') expect(viaNode.headers['x-request-id']).toBe('trace-1.a');
      if (c.name === 'a request id that is not one') expect(viaNode.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});
