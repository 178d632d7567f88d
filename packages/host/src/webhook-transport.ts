import type { LookupAddress, LookupOptions } from 'node:dns';
import dns from 'node:dns';
import {
  type DestinationPolicy,
  RECEIVER_ANSWER_MAX_BYTES,
  readBodyTextPrefix,
  refusedAddressReason,
  WEBHOOK_CONNECTION_WAIT_MS,
  type WebhookTransport,
} from '@sightline/core';
import { Agent, type Dispatcher } from 'undici';

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

/**
 * Node's webhook transport: the global fetch (so msw can intercept third parties in tests) with an
 * undici Agent whose DNS lookup refuses forbidden addresses at connect time — closing the
 * DNS-rebinding gap — and no redirects followed. IP-literal hosts never reach the lookup, so they
 * are checked before connecting.
 *
 * Two clocks, because the agent holds a bounded number of connections per origin and a burst
 * queues for them: `connectionWaitMs` while the request waits for a connection (and connects), then
 * the receiver's `timeoutMs` from the moment the request goes on the wire. A receiver that answers
 * each request in 6 s of a 10 s budget is then never blamed for time spent in our own queue. Only
 * the first RECEIVER_ANSWER_MAX_BYTES of an answer are read; a longer body is cancelled, which
 * destroys its connection instead of returning it to the pool half-read.
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
  const agent = new Agent({
    connect: { lookup: guardedLookup as never, timeout: 10_000 },
    keepAliveTimeout: 10_000,
    connections: options.connectionsPerOrigin ?? 64,
  });
  return {
    async request(url, init) {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
      const refused = refusedAddressReason(host, policy);
      if (refused) throw new Error(`refused to connect: ${refused}`);
      // One signal for both clocks: aborting fetch rejects it with the reason at once. A request
      // given up on while queued stays in undici's queue until a connection frees up, and is then
      // aborted before a byte is written (closing that connection); a sent one loses its connection.
      const abort = new AbortController();
      let settled = false;
      let answerTimer: ReturnType<typeof setTimeout> | undefined;
      const waitTimer = setTimeout(() => abort.abort(new ConnectionWaitError(connectionWaitMs)), connectionWaitMs);
      const onSent = () => {
        // Nothing to time for a request already given up on; a retried dispatch keeps its first clock.
        if (settled || answerTimer !== undefined) return;
        clearTimeout(waitTimer);
        answerTimer = setTimeout(
          () => abort.abort(new DOMException(`the receiver did not answer within ${init.timeoutMs} ms`, 'TimeoutError')),
          init.timeoutMs,
        );
      };
      try {
        const res = await fetch(url, {
          method: init.method,
          headers: init.headers,
          body: init.body ?? null,
          redirect: 'manual',
          signal: abort.signal,
          dispatcher: agent.compose(startClockOnSend(onSent)),
        } as RequestInit);
        // The status is the answer; a body that stalls or breaks afterwards leaves it standing.
        const prefix = await readBodyTextPrefix(res, RECEIVER_ANSWER_MAX_BYTES).catch(() => null);
        return { status: res.status, body: prefix?.text ?? '' };
      } finally {
        settled = true;
        clearTimeout(waitTimer);
        clearTimeout(answerTimer);
      }
    },
    close: () => agent.close(),
  };
}

/**
 * An interceptor that calls `onSent` when undici puts the request on a connected socket —
 * `onRequestStart` fires just before the request is written, after any wait for a free connection
 * (undici's docs: "invoked before request is dispatched on socket") — and passes everything else
 * through unchanged.
 */
function startClockOnSend(onSent: () => void): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) =>
    dispatch(opts, {
      onRequestStart(controller, context: unknown) {
        onSent();
        handler.onRequestStart?.(controller, context);
      },
      onRequestUpgrade: (controller, statusCode, headers, socket) => handler.onRequestUpgrade?.(controller, statusCode, headers, socket),
      onResponseStart: (controller, statusCode, headers, statusMessage) => handler.onResponseStart?.(controller, statusCode, headers, statusMessage),
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
      onResponseError: (controller, error) => handler.onResponseError?.(controller, error),
    });
}
