import type { HostBodyReader } from '@sightline/core';

/** What the body reader needs of Node's IncomingMessage (the `incoming` binding of @hono/node-server). */
interface NodeIncoming {
  on(event: string, listener: (arg: never) => void): unknown;
  removeListener(event: string, listener: (arg: never) => void): unknown;
  readableEnded?: boolean;
  destroyed?: boolean;
  /** Set by Node's parser once the whole message, body included, has been received. */
  complete?: boolean;
  readableLength?: number;
  read?(): Uint8Array | null;
}

function nodeIncoming(env: unknown): NodeIncoming | undefined {
  const incoming = (env as { incoming?: unknown } | undefined)?.incoming;
  return incoming && typeof incoming === 'object' && 'on' in incoming && 'removeListener' in incoming ? (incoming as NodeIncoming) : undefined;
}

/**
 * The Node host's body reader: the raw IncomingMessage, read with data/end events. Going through
 * the WHATWG Request instead builds an undici Request, an AbortController and a web stream per
 * call, which cost more than the rest of a cached lookup; an async iterator over the stream costs
 * more than events too. Every way the stream can stop settles the promise: end, error (a reset),
 * close without an end (an abort whose error nobody was listening for yet), and the body timeout.
 */
export const readNodeBody: HostBodyReader = (env, limits) => {
  const incoming = nodeIncoming(env);
  if (!incoming) return undefined;
  if (incoming.readableEnded) return Promise.resolve([]);
  if (incoming.destroyed) return Promise.reject(limits.cutOff());
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (incoming.complete && incoming.read) {
    // A small body has usually arrived with its headers: the parser has finished the message and
    // holds all of it, so one synchronous read takes it without subscribing to the stream. (Its
    // 'end' still follows, which is what @hono/node-server waits for before it would drain.)
    const all = incoming.read();
    if (all) {
      chunks.push(all);
      size = all.byteLength;
    }
    if (size > limits.maxBytes) return Promise.reject(limits.tooLarge());
    if (!incoming.readableLength) return Promise.resolve(chunks);
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(limits.stalled()), limits.timeoutMs);
    const finish = (err?: Error) => {
      clearTimeout(timer);
      incoming.removeListener('data', onData);
      incoming.removeListener('end', onEnd);
      incoming.removeListener('error', onError);
      incoming.removeListener('close', onClose);
      if (err) reject(err);
      else resolve(chunks);
    };
    const onData = (chunk: Uint8Array) => {
      size += chunk.byteLength;
      if (size > limits.maxBytes) finish(limits.tooLarge());
      else chunks.push(chunk);
    };
    const onEnd = () => finish();
    const onError = () => finish(limits.cutOff());
    const onClose = () => finish(incoming.readableEnded ? undefined : limits.cutOff());
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
};
