/**
 * The Node host's socket peer for a request, from @hono/node-server's `incoming` binding: what the
 * public tracker policy starts from when it decides the visitor's address (core's clientAddress).
 */
export function nodeRemoteAddress(env: unknown): string | undefined {
  const incoming = (env as { incoming?: { socket?: { remoteAddress?: unknown } } } | undefined)?.incoming;
  const address = incoming?.socket?.remoteAddress;
  return typeof address === 'string' ? address : undefined;
}
