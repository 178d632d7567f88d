import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { MAX_BODY_BYTES } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { seedPartner } from './support/seed.ts';

/**
 * Request bodies over real sockets, where the Node host reads the raw IncomingMessage rather than a
 * WHATWG Request: sized and chunked bodies, the 64 KiB limit, and that the route still gets the JSON.
 */
let env: TestEnv;
let server: ServerType;
const errors: string[] = [];
let port = 0;
let key = '';

beforeAll(async () => {
  env = await createTestEnv({ log: { debug() {}, info() {}, warn() {}, error: (msg) => void errors.push(msg) } });
  key = (await seedPartner(env.deps, { quota: 10 })).key;
  await new Promise<void>((resolve) => {
    server = serve({ fetch: env.app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
      port = info.port;
      resolve();
    });
  });
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await env.close();
});

/** A POST to create-child whose body is written in `parts`, with or without a Content-Length. */
function post(parts: Buffer[], { chunked, type = 'application/json', gapMs = 0 }: { chunked: boolean; type?: string; gapMs?: number }) {
  return new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    const length = parts.reduce((n, p) => n + p.length, 0);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/functions/v1/partner-create-child-key',
        headers: { 'content-type': type, 'x-access-key': key, ...(chunked ? {} : { 'content-length': String(length) }) },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
      },
    );
    req.on('error', reject);
    void (async () => {
      for (const [i, p] of parts.entries()) {
        if (i > 0 && gapMs) await new Promise((r) => setTimeout(r, gapMs));
        req.write(p);
      }
      req.end();
    })();
  });
}

const json = (v: unknown) => Buffer.from(JSON.stringify(v));

describe('request bodies on the Node host', () => {
  it('reads a body sent in pieces, sized or chunked', async () => {
    for (const chunked of [false, true]) {
      const body = json({ name: 'Piecewise Ltd', domain: `piecewise-${chunked ? 'chunked' : 'sized'}.example` });
      const res = await post([body.subarray(0, 5), body.subarray(5, 20), body.subarray(20)], { chunked });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({ success: true, child: { name: 'Piecewise Ltd' } });
    }
  });

  it('waits for the rest of a body that is still arriving when the route starts', async () => {
    for (const chunked of [false, true]) {
      const body = json({ name: 'Slow Sender Ltd', domain: `slow-${chunked ? 'chunked' : 'sized'}.example` });
      const res = await post([body.subarray(0, 10), body.subarray(10)], { chunked, gapMs: 60 });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({ child: { name: 'Slow Sender Ltd' } });
    }
  });

  it('takes a body the parser already holds in one read, without subscribing, and still applies the limit', async () => {
    // What Node's IncomingMessage looks like once the parser has the whole message.
    const held = (bytes: Buffer) => {
      const subscribed: string[] = [];
      let buffered: Buffer | null = bytes;
      const incoming = {
        complete: true,
        get readableLength() {
          return buffered?.length ?? 0;
        },
        read() {
          const all = buffered;
          buffered = null;
          return all;
        },
        on: (event: string) => void subscribed.push(event),
        removeListener: () => undefined,
      };
      return { incoming, subscribed };
    };
    const send = (incoming: object) =>
      env.app.fetch(
        new Request('http://localhost/functions/v1/partner-create-child-key', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-access-key': key },
          body: 'unused: the route must read the Node message',
        }),
        { incoming },
      );
    const ok = held(json({ name: 'Held Ltd', domain: 'held.example' }));
    const created = await send(ok.incoming);
    expect(created.status, await created.clone().text()).toBe(201);
    expect(ok.subscribed).toEqual([]);
    const big = held(json({ name: 'x'.repeat(MAX_BODY_BYTES), domain: 'held-big.example' }));
    const refused = await send(big.incoming);
    expect(refused.status).toBe(413);
  });

  it('refuses a declared length over the limit without reading, and a chunked body once it passes it', async () => {
    const big = json({ name: 'x'.repeat(MAX_BODY_BYTES), domain: 'big.example' });
    for (const chunked of [false, true]) {
      const res = await post([big], { chunked });
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({ success: false });
      expect(String(res.body.error)).toMatch(/at most 65536 bytes/);
    }
    const [row] = await env.db<{ n: number }>`select count(*)::int as n from accounts where name like 'xxxx%'`;
    expect(row?.n).toBe(0);
  });

  it('accepts the JSON media types the route validator does, and refuses the rest with 400 up front', async () => {
    const ok = await post([json({ name: 'Charset Ltd', domain: 'charset.example' })], { chunked: false, type: 'application/json; charset=utf-8' });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    for (const type of ['application/json ;charset=utf-8', 'application/json;', 'text/json', 'application/jsonx']) {
      const res = await post([json({ name: 'Odd type', domain: 'odd.example' })], { chunked: false, type });
      expect(res.status, type).toBe(400);
      expect(String(res.body.error)).toMatch(/Content-Type: application\/json/);
    }
  });

  it('a client that hangs up mid-body is no server error, and the server carries on', async () => {
    await new Promise<void>((resolve) => {
      const req = request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/functions/v1/partner-create-child-key',
        headers: { 'content-type': 'application/json', 'x-access-key': key, 'content-length': '1000' },
      });
      req.on('error', () => resolve());
      req.write('{"name": "Half');
      setTimeout(() => req.destroy(), 50);
      setTimeout(resolve, 200);
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(errors).toEqual([]);
    const res = await post([json({ name: 'After the hang-up', domain: 'after.example' })], { chunked: false });
    expect(res.status).toBe(201);
  });

  it('still answers malformed JSON with 400', async () => {
    const res = await post([Buffer.from('{"name":')], { chunked: false });
    expect(res.status).toBe(400);
    expect(String(res.body.error)).toMatch(/JSON/i);
  });
});
