import type { RequestHeaders } from '@sightline/core';

/**
 * The Node host's socket peer for a request, from @hono/node-server's `incoming` binding: what the
 * public tracker policy starts from when it decides the visitor's address (core's clientAddress).
 */
export function nodeRemoteAddress(env: unknown): string | undefined {
  const incoming = (env as { incoming?: { socket?: { remoteAddress?: unknown } } } | undefined)?.incoming;
  const address = incoming?.socket?.remoteAddress;
  return typeof address === 'string' ? address : undefined;
}

/**
 * The request's headers as Node parsed them, from @hono/node-server's `incoming` binding; absent for
 * a request that did not come through Node's server (the app called directly), which then reads
 * its web Headers. Node keeps only the first of a header that cannot repeat (Content-Type,
 * Content-Length, Authorization…) and joins the repeats of the others.
 */
export function nodeRequestHeaders(env: unknown): RequestHeaders | undefined {
  return (env as { incoming?: { headers?: RequestHeaders } } | undefined)?.incoming?.headers;
}
