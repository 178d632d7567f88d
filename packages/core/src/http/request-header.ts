import type { Context } from 'hono';
import type { HonoEnv } from './hono-env.ts';

/**
 * A request header by its lower-case name, as `c.req.header` gives it, read through the host's own
 * request binding when it has one (deps.headersOf). On Node, `c.req.header` builds a whole web
 * Headers object from the incoming message on first use (every header validated and copied): a
 * sixth of the server CPU of a cached lookup. The binding reads the one header Node already parsed.
 */
export function requestHeader(c: Context<HonoEnv>, name: string): string | undefined {
  const headers = c.get('deps').headersOf?.(c.env);
  if (!headers) return c.req.header(name);
  const value = headers[name];
  // Repeats joined as web Headers join them.
  return Array.isArray(value) ? value.join(', ') : value;
}
