import type { ServerResponse } from 'node:http';
import { describeNetworkError, RECEIVER_ANSWER_MAX_BYTES } from '@sightline/core';
import { createNodeWebhookTransport } from '@sightline/host';
import { afterEach, describe, expect, it } from 'vitest';
import { startReceiver } from './support/receiver.ts';

/*
 * The Node webhook transport against real receivers on 127.0.0.1: what it reads of an answer, and
 * what its timeout measures when requests queue for one of the per-origin connections.
 */

const dev = { allowPrivate: true };
const post = { method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: '{}' };
const MiB = 1024 * 1024;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c().catch(() => undefined)));
});

async function receiver(handler: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(handler);
  cleanups.push(r.close);
  return r;
}
function transport(options?: Parameters<typeof createNodeWebhookTransport>[1]) {
  const t = createNodeWebhookTransport(dev, options);
  cleanups.push(() => t.close());
  return t;
}

/**
 * Answers 200 and streams `total` bytes of 'x', as fast as the client takes them, counting what the
 * socket accepted; `closed` resolves with that count once the response is finished or torn down.
 */
function streamHugeBody(res: ServerResponse, total: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let written = 0;
  return new Promise((resolve) => {
    res.on('close', () => resolve(written));
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(total) });
    const pump = () => {
      while (written < total && !res.destroyed) {
        written += chunk.byteLength;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end();
    };
    pump();
  });
}

describe("a receiver's answer is read only up to a small cap", () => {
  it('a 256 MiB answer returns its status promptly and is never downloaded', async () => {
    let closed: Promise<number> = Promise.resolve(0);
    const r = await receiver((_q, res) => {
      closed = streamHugeBody(res, 256 * MiB);
    });
    const t = transport();
    const started = performance.now();
    const res = await t.request(r.url, { ...post, timeoutMs: 10_000 });
    expect(res.status).toBe(200);
    expect(res.body).toBe('x'.repeat(RECEIVER_ANSWER_MAX_BYTES));
    expect(performance.now() - started).toBeLessThan(5_000);
    // The connection is torn down, not drained: the receiver managed to hand the socket only what
    // fits in buffers along the way (kernel socket buffers, one undici read), not the body.
    const written = await closed;
    expect(written).toBeLessThan(32 * MiB);
  });

  it('a connection whose answer was cut short is not reused: the next request gets a clean answer', async () => {
    let n = 0;
    const sockets = new Set<unknown>();
    const r = await receiver((_q, res) => {
      sockets.add(res.socket);
      if (++n === 1) return void streamHugeBody(res, 64 * MiB);
      res.writeHead(201, { 'content-type': 'text/plain' }).end('second answer');
    });
    // One connection per origin: the second request can only go out once the first's is settled.
    const t = transport({ connectionsPerOrigin: 1 });
    expect((await t.request(r.url, { ...post, timeoutMs: 5_000 })).status).toBe(200);
    expect(await t.request(r.url, { ...post, timeoutMs: 5_000 })).toMatchObject({ status: 201, body: 'second answer' });
    expect(sockets.size).toBe(2);
  });

  it('answers the headers (names in lower case), and reads up to maxAnswerBytes when a caller asks for more', async () => {
    const big = 'x'.repeat(20_000);
    const r = await startReceiver((_q, res) => res.writeHead(200, { 'Retry-After': '30', 'Content-Security-Policy': "default-src 'self'" }).end(big));
    const t = createNodeWebhookTransport({ allowPrivate: true });
    try {
      const capped = await t.request(r.url, { ...post, timeoutMs: 5_000 });
      expect(capped.headers).toMatchObject({ 'retry-after': '30', 'content-security-policy': "default-src 'self'" });
      expect(capped.body?.length).toBeLessThanOrEqual(4096);
      const page = await t.request(r.url, { method: 'GET', headers: {}, timeoutMs: 5_000, maxAnswerBytes: 64 * 1024 });
      expect(page.body).toBe(big);
    } finally {
      await t.close();
      await r.close();
    }
  });

  it('an answer within the cap is read to its end, so its connection goes back to the pool', async () => {
    const sockets = new Set<unknown>();
    const r = await receiver((_q, res) => {
      sockets.add(res.socket);
      res.end('ok');
    });
    const t = transport({ connectionsPerOrigin: 1 });
    expect(await t.request(r.url, { ...post, timeoutMs: 5_000 })).toMatchObject({ status: 200, body: 'ok' });
    expect(await t.request(r.url, { ...post, timeoutMs: 5_000 })).toMatchObject({ status: 200, body: 'ok' });
    expect(sockets.size).toBe(1);
  });

  it('a body that trickles past the timeout does not undo the status the receiver already gave', async () => {
    const r = await receiver((_q, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('a');
      const timer = setInterval(() => res.write('b'), 100);
      res.on('close', () => clearInterval(timer));
    });
    const t = transport();
    const started = performance.now();
    const res = await t.request(r.url, { ...post, timeoutMs: 500 });
    expect(res.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe("the receiver's timeout starts when the request is sent", () => {
  it('requests queued behind busy connections are not timed out while they wait', async () => {
    // Scaled down from the report: 64 connections, 10 s, a 6 s receiver and a burst of 200.
    const r = await receiver((_q, res) => void setTimeout(() => res.end('ok'), 600));
    const t = transport({ connectionsPerOrigin: 2 });
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.request(r.url, { ...post, timeoutMs: 1_000 }).then(
          (x) => x.status,
          (e: unknown) => describeNetworkError(e),
        ),
      ),
    );
    expect(results).toEqual(Array.from({ length: 8 }, () => 200));
    expect(r.received).toHaveLength(8);
  });

  it('a receiver slower than the timeout still fails as "no answer within the timeout"', async () => {
    const r = await receiver((_q, res) => void setTimeout(() => res.end('late'), 1_500));
    const t = transport();
    const started = performance.now();
    const err = await t.request(r.url, { ...post, timeoutMs: 300 }).catch((e: unknown) => e);
    expect(describeNetworkError(err)).toBe('no answer within the timeout');
    expect(performance.now() - started).toBeLessThan(1_200);
  });

  it('a request that gets no connection within the wait bound fails as "no connection available", unsent', async () => {
    const r = await receiver((_q, res) => void setTimeout(() => res.end('ok'), 800));
    const t = transport({ connectionsPerOrigin: 1, connectionWaitMs: 200 });
    const first = t.request(r.url, { ...post, timeoutMs: 5_000 });
    const started = performance.now();
    const err = await t.request(r.url, { ...post, timeoutMs: 5_000 }).catch((e: unknown) => e);
    expect(describeNetworkError(err)).toMatch(/^no connection available within 200 ms/);
    expect(performance.now() - started).toBeLessThan(700);
    expect((await first).status).toBe(200);
    // Abandoned in the queue, it never goes on the wire once the connection frees up.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(r.received).toHaveLength(1);
  });
});
