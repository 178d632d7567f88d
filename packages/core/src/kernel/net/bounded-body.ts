/**
 * Reading what a server we do not control answered, without letting it choose how much memory we
 * spend: `arrayBuffer()`/`text()` buffer whatever arrives, and one receiver streaming 512 MiB took
 * the Node host from 147 MB to 1.45 GB. Web streams only, so core, the Node host and Deno share it.
 */

export interface BodyPrefix {
  /** At most `limit` bytes: the whole body when `complete`, else its first `limit` bytes. */
  bytes: Uint8Array;
  /** The body ended within `limit` bytes; when false the rest was never read. */
  complete: boolean;
}

/**
 * The first `limit` bytes of `res`'s body. A body that ends within `limit` is read to its end, so
 * the connection can go back to the pool; a longer one is cancelled, which makes fetch abort the
 * request and close its connection rather than drain an unbounded stream. Holds at most `limit`
 * bytes plus one chunk in flight. Rejects as the body's stream does (an aborted signal, a reset).
 */
export async function readBodyPrefix(res: Response, limit: number): Promise<BodyPrefix> {
  if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`limit must be a non-negative integer, got ${limit}`);
  const body = res.body;
  if (!body) return { bytes: new Uint8Array(0), complete: true };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  // `<=`: at exactly `limit` one more read tells an ended body from a longer one.
  while (size <= limit) {
    const { done, value } = await reader.read();
    if (done) return { bytes: concat(chunks, size), complete: true };
    chunks.push(value);
    size += value.byteLength;
  }
  // Not awaited: cancelling aborts the request, and some stream sources (msw's) never settle it.
  reader.cancel().catch(() => undefined);
  return { bytes: concat(chunks, limit), complete: false };
}

/** `readBodyPrefix` decoded as UTF-8; a multi-byte character cut at `limit` becomes U+FFFD. */
export async function readBodyTextPrefix(res: Response, limit: number): Promise<{ text: string; complete: boolean }> {
  const { bytes, complete } = await readBodyPrefix(res, limit);
  return { text: new TextDecoder().decode(bytes), complete };
}

/** The first `size` bytes of `chunks`, copied once. */
function concat(chunks: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    if (at >= size) break;
    const part = chunk.byteLength <= size - at ? chunk : chunk.subarray(0, size - at);
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
