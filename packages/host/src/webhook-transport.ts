import type { LookupAddress, LookupOptions } from 'node:dns';
import dns from 'node:dns';
import {
  type DestinationPolicy,
  RECEIVER_ANSWER_MAX_BYTES,
  refusedAddressReason,
  WEBHOOK_CONNECTION_WAIT_MS,
  type WebhookTransport,
} from '@sightline/core';
import type { Agent, Dispatcher } from 'undici';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export interface NodeWebhookTransportOptions {
  /** Connections kept per origin (undici's `connections`); further requests queue for one. */
  connectionsPerOrigin?: number;
  /**
   * How long a request may queue for a connection, connecting included, before it fails as "no
   * connection available" without being sent (WEBHOOK_CONNECTION_WAIT_MS unless set).
   */
  connectionWaitMs?: number;
}

/** Fails a request still queued for a connection; its message is what the attempt log shows. */
class ConnectionWaitError extends Error {
  constructor(waitedMs: number) {
    super(`no connection available within ${waitedMs} ms (too many requests in flight to this receiver)`);
    this.name = 'ConnectionWaitError';
  }
}

/** Ends a connection whose answer went on past what we read; never shown (the status already stands). */
class AnswerCutShort extends Error {
  constructor() {
    super('answer cut short after the status (beyond the cap, or past the timeout)');
    this.name = 'AnswerCutShort';
  }
}

/**
 * Node's webhook transport: undici's dispatcher API on one Agent, whose DNS lookup refuses
 * forbidden addresses at connect time — closing the DNS-rebinding gap — and which follows no
 * redirects (undici's dispatcher never does). IP-literal hosts never reach the lookup, so they are
 * checked before connecting. One delivery is one handler on the dispatcher, with no fetch, no web
 * streams and no per-request dispatcher around it: through the global fetch (Node's own undici,
 * wrapped around this one's Agent), requests took 2.7 s of the delivery engine's 3.3 s of CPU on
 * its thread for 10,000 deliveries, and the webhooks bench delivered half as many a second as with
 * this handler. (msw cannot intercept this transport; tests use real receivers on 127.0.0.1.)
 *
 * Two clocks, because the agent holds a bounded number of connections per origin and a burst
 * queues for them: `connectionWaitMs` while the request waits for a connection (and connects), then
 * the receiver's `timeoutMs` from the moment the request goes on the wire (`onRequestStart`, which
 * undici calls just before writing it). A receiver that answers each request in 6 s of a 10 s
 * budget is then never blamed for time spent in our own queue. A request given up on while queued
 * fails at once, and is aborted when undici dequeues it, before a byte is written. Only the first
 * RECEIVER_ANSWER_MAX_BYTES of an answer (or the request's `maxAnswerBytes`) are read; a longer body ends its connection instead of
 * returning it to the pool half-read, and so does a body still arriving when the timeout is up.
 */
export function createNodeWebhookTransport(
  policy: DestinationPolicy,
  options: NodeWebhookTransportOptions = {},
): WebhookTransport & { close(): Promise<void> } {
  const connectionWaitMs = options.connectionWaitMs ?? WEBHOOK_CONNECTION_WAIT_MS;
  const guardedLookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      for (const a of addresses) {
        const refused = refusedAddressReason(a.address, policy);
        if (refused) {
          const e: NodeJS.ErrnoException = new Error(`refused to connect to ${hostname}: ${refused}`);
          e.code = 'EFORBIDDENADDRESS';
          return callback(e, []);
        }
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      return callback(null, first.address, first.family);
    });
  };
  // undici is loaded with the first delivery, not at start: importing it is a seventh of a cold start.
  let agentReady: Promise<Agent> | undefined;
  const agentFor = () => {
    agentReady ??= import('undici').then(
      ({ Agent }) =>
        new Agent({
          connect: { lookup: guardedLookup as never, timeout: 10_000 },
          keepAliveTimeout: 10_000,
          connections: options.connectionsPerOrigin ?? 64,
        }),
    );
    return agentReady;
  };
  return {
    async request(url, init) {
      const target = new URL(url);
      const refused = refusedAddressReason(target.hostname.replace(/^\[|\]$/g, ''), policy);
      if (refused) throw new Error(`refused to connect: ${refused}`);
      const agent = await agentFor();
      return new Promise((resolve, reject) => {
        const exchange = new Exchange(connectionWaitMs, init.timeoutMs, resolve, reject, init.maxAnswerBytes ?? RECEIVER_ANSWER_MAX_BYTES);
        try {
          agent.dispatch(
            {
              origin: target.origin,
              path: `${target.pathname}${target.search}`,
              method: init.method,
              headers: init.headers,
              body: init.body ?? null,
            },
            exchange,
          );
        } catch (err) {
          exchange.fail(err);
        }
      });
    },
    close: async () => {
      if (agentReady) await (await agentReady).close();
    },
  };
}

const decoder = new TextDecoder();

/** One request and its answer, as undici's dispatcher reports them. */
class Exchange implements Dispatcher.DispatchHandler {
  #settled = false;
  #reason: Error | undefined;
  #controller: Dispatcher.DispatchController | undefined;
  #status: number | undefined;
  #headers: Record<string, string> = {};
  #chunks: Buffer[] = [];
  #size = 0;
  #waitTimer: ReturnType<typeof setTimeout> | undefined;
  #answerTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    waitMs: number,
    private readonly timeoutMs: number,
    private readonly resolve: (answer: { status: number; body: string; headers: Record<string, string> }) => void,
    private readonly reject: (err: unknown) => void,
    private readonly maxBytes: number,
  ) {
    this.#waitTimer = setTimeout(() => this.fail(new ConnectionWaitError(waitMs)), waitMs);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // Given up on while queued: aborted here, before a byte is written.
    if (this.#settled) return void controller.abort(this.#reason ?? new AnswerCutShort());
    clearTimeout(this.#waitTimer);
    this.#answerTimer = setTimeout(() => {
      if (this.#status === undefined) this.fail(new DOMException(`the receiver did not answer within ${this.timeoutMs} ms`, 'TimeoutError'));
      // The status stands; the body still arriving is never read, and its connection goes.
      else this.#answer('', true);
    }, this.timeoutMs);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return;
    this.#status = statusCode;
    for (const [name, value] of Object.entries(headers)) {
      if (value !== undefined) this.#headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    }
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#chunks.push(chunk);
    this.#size += chunk.byteLength;
    // Past the cap: the rest is never read, and the connection goes rather than back to the pool half-read.
    if (this.#size > this.maxBytes) this.#answer(this.#body(), true);
  }

  onResponseEnd(): void {
    if (!this.#settled) this.#answer(this.#body(), false);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.#settled) return;
    // An answer that breaks after its status leaves the status standing, with no body.
    if (this.#status !== undefined) this.#answer('', false);
    else this.fail(err);
  }

  /** Settles as failed, and stops the request wherever it is: queued, on the wire, or answering. */
  fail(err: unknown): void {
    if (this.#settled) return;
    this.#settle();
    this.#reason = err instanceof Error ? err : new Error(String(err));
    this.#controller?.abort(this.#reason);
    this.reject(err);
  }

  #answer(body: string, cut: boolean): void {
    this.#settle();
    if (cut) this.#controller?.abort(new AnswerCutShort());
    this.resolve({ status: this.#status ?? 0, body, headers: this.#headers });
  }

  #settle(): void {
    this.#settled = true;
    clearTimeout(this.#waitTimer);
    clearTimeout(this.#answerTimer);
  }

  #body(): string {
    const all = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks);
    return decoder.decode(all.subarray(0, this.maxBytes));
  }
}
