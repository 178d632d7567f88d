import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { ERROR_CODES, type ErrorCode, type Logger } from '@sightline/core';

/**
 * Node's HTTP server for the app, with every answer in the `{ success: false, error, code }` envelope —
 * including the ones Node's parser gives before the app runs (a bad Content-Length, a method it
 * does not know, oversized headers, a request that takes too long) and the ones @hono/node-server
 * gives before the app runs (a malformed Host, a backslash in the path), which would otherwise be
 * empty or text/plain.
 */
export interface NodeServerOptions {
  fetch: (request: Request, env: unknown) => Response | Promise<Response>;
  log: Logger;
  /** Methods the path answers to, for the Allow header of a 405 on a method Node does not know. */
  allowedMethods?: (pathname: string) => string | undefined;
  /** Headers must arrive within this (slow-loris guard). */
  headersTimeoutMs?: number;
  /**
   * The whole request, body included, must arrive within this. Bodies are at most 64 KiB, so a
   * request still incomplete after this is stalled, not slow; the app's own body timeout answers
   * 408 first, and this is the backstop for whatever the app is not reading.
   */
  requestTimeoutMs?: number;
}

/** What the parser's error codes mean to a client: the reason (its status from core's table) and a message. */
function describeParseError(err: NodeJS.ErrnoException): { code: ErrorCode; error: string } {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'headers_too_large', error: 'the request headers are too large (at most 16 KiB in all)' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'request_timeout', error: 'the request did not arrive in time' };
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return { code: 'invalid_request', error: 'the Content-Length header is not valid' };
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return { code: 'invalid_request', error: 'the Transfer-Encoding header is not valid' };
    case 'HPE_INVALID_METHOD':
      return { code: 'method_not_allowed', error: 'that HTTP method is not allowed' };
    default:
      return { code: 'invalid_request', error: 'the request is not valid HTTP' };
  }
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

/** The request target of the first line of what the client sent, when it can be read. */
function requestPath(raw: unknown): string | undefined {
  if (!(raw instanceof Uint8Array)) return undefined;
  const line = Buffer.from(raw.subarray(0, 2048)).toString('latin1').split('\r\n', 1)[0] ?? '';
  const target = line.split(' ')[1];
  if (!target?.startsWith('/')) return undefined;
  return target.split('?', 1)[0];
}

function answerClientError(err: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Socket, opts: NodeServerOptions) {
  // A response already under way on this socket cannot be replaced: writing now would corrupt it
  // (the same check Node's own default handler makes).
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const { code, error } = describeParseError(err);
  const status = ERROR_CODES[code].status;
  const body = JSON.stringify({ success: false, error, code });
  const headers = [
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Bad Request'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  if (status === 405) {
    const path = requestPath(err.rawPacket);
    const allow = path ? opts.allowedMethods?.(path) : undefined;
    if (allow) headers.push(`Allow: ${allow}`);
  }
  socket.end(`${headers.join('\r\n')}\r\n\r\n${body}`);
}

export function createNodeServer(opts: NodeServerOptions): Server {
  const listener = getRequestListener(opts.fetch, {
    // What @hono/node-server refuses before the app sees the request: a malformed or missing Host,
    // a backslash in the path. Anything else reaching here is ours and unexpected.
    errorHandler: (err) => {
      if (err instanceof Error && err.name === 'RequestError') {
        // Its messages name the part at fault, except a URL that would not parse from Host + path.
        const what = /^invalid url$/i.test(err.message) ? 'the Host header or the request path is not valid' : err.message.toLowerCase();
        return Response.json({ success: false, error: `bad request: ${what}`, code: 'invalid_request' satisfies ErrorCode }, { status: 400 });
      }
      opts.log.error('unhandled error before the app', { error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
      return Response.json({ success: false, error: 'internal error, please retry', code: 'internal_error' satisfies ErrorCode }, { status: 500 });
    },
  });
  const server = createServer(
    {
      headersTimeout: opts.headersTimeoutMs ?? 20_000,
      requestTimeout: opts.requestTimeoutMs ?? 30_000,
      // How often Node checks those two; its default (30 s) lets a stalled request live that much longer.
      connectionsCheckingInterval: 1_000,
    },
    listener,
  );
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => answerClientError(err, socket, opts));
  return server;
}
