import type { Context } from 'hono';
import { AppError } from '../kernel/errors.ts';
import type { HonoEnv } from './hono-env.ts';
import { requestHeader } from './request-header.ts';

/** Every request body the API accepts is a small JSON object; anything bigger is refused unread. */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * Bodies are at most 64 KiB: one still arriving after this is stalled (a Content-Length larger
 * than what is sent, a client gone quiet), and holding it would hold a connection for as long
 * as Node's request timeout. It is answered 408 and the connection closed.
 */
export const BODY_TIMEOUT_MS = 10_000;

/** How a body read ends when it does not end well; shared by core's reader and a host's. */
export interface BodyLimits {
  maxBytes: number;
  timeoutMs: number;
  /** 413: over `maxBytes`. */
  tooLarge(): AppError;
  /** 408: not all there within `timeoutMs`. */
  stalled(): AppError;
  /** 400: the client hung up mid-body. */
  cutOff(): AppError;
}

/**
 * A host's own, faster way to read a request body (the Node host reads the raw IncomingMessage):
 * the body's chunks, or undefined when this request is not one it can read, and core's web-stream
 * reader is used. Core knows no runtime; the host supplies this through ServerOptions.
 */
export type HostBodyReader = (env: unknown, limits: BodyLimits) => Promise<Uint8Array[]> | undefined;

export function bodyLimits(maxBytes: number, timeoutMs: number): BodyLimits {
  return {
    maxBytes,
    timeoutMs,
    tooLarge: () => new AppError('payload_too_large', `the request body must be at most ${maxBytes} bytes`),
    // `Connection: close`: the rest of a stalled body may still come, and must not be read as a next request.
    stalled: () => new AppError('request_timeout', `the request body did not arrive within ${timeoutMs / 1000} s`, {}, { Connection: 'close' }),
    // A client that hangs up mid-body made the mistake; it is not a server error worth a stack trace.
    cutOff: () => new AppError('invalid_request', 'the request body was cut off before it ended'),
  };
}

/** The web-stream reader (Deno, Supabase, in-process requests): bounded in size and in time. */
async function readWebBody(c: Context<HonoEnv>, limits: BodyLimits): Promise<Uint8Array[]> {
  const reader = c.req.raw.body?.getReader();
  if (!reader) return [];
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timedOut = false;
  // Cancelling makes the pending read() settle as done, so the loop ends; the flag tells a stall
  // from the body's real end.
  const timer = setTimeout(() => {
    timedOut = true;
    void reader.cancel().catch(() => undefined);
  }, limits.timeoutMs);
  try {
    for (;;) {
      const next = await reader.read().catch(() => {
        throw limits.cutOff();
      });
      if (next.done) break;
      size += next.value.byteLength;
      if (size > limits.maxBytes) throw limits.tooLarge();
      chunks.push(next.value);
    }
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) throw limits.stalled();
  return chunks;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body as UTF-8 text, at most `limits.maxBytes` bytes (413 past it, 400 if not UTF-8, 408 if it
 * does not all arrive in time), through the host's reader when it has one for this request.
 */
export async function readBodyText(c: Context<HonoEnv>, limits: BodyLimits, hostReader: HostBodyReader | undefined): Promise<string> {
  const declared = Number(requestHeader(c, 'content-length') ?? '0');
  if (declared > limits.maxBytes) throw limits.tooLarge();
  const chunks = (await hostReader?.(c.env, limits)) ?? (await readWebBody(c, limits));
  let size = 0;
  for (const chunk of chunks) size += chunk.byteLength;
  const bytes = chunks.length === 1 ? (chunks[0] as Uint8Array) : concatBytes(chunks, size);
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new AppError('invalid_request', 'the request body is not valid UTF-8');
  }
}

function concatBytes(chunks: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
