import { readBodyTextPrefix } from '../../kernel/net/bounded-body.ts';
import { parseIp } from '../../kernel/net/ip.ts';
import { readObject, readString } from './normalise.ts';

/**
 * A paid provider answered with an HTTP status we treat as a failure. The status is kept so the runner
 * (and logs) can tell a quota 403 from a 5xx outage; the request URL is deliberately not part of the
 * message because some providers (ipapi.is) take the API key in the query string.
 */
export class ProviderHttpError extends Error {
  constructor(
    readonly provider: string,
    readonly status: number,
    detail: string | null,
  ) {
    super(`${provider} answered HTTP ${status}${detail ? `: ${detail}` : ''}`);
    this.name = 'ProviderHttpError';
  }
}

export interface ProviderJson {
  status: number;
  body: unknown;
}

/**
 * The largest answer we take from a provider. Their documented answers for one IP are a few KiB;
 * a megabyte leaves room for verbose plans while keeping a broken or hostile endpoint from
 * filling our memory.
 */
export const PROVIDER_ANSWER_MAX_BYTES = 1024 * 1024;

/** What we read of an error or 404 body: enough for the provider's message, which is cut to 200 characters anyway. */
const ERROR_BODY_MAX_BYTES = 4 * 1024;

/**
 * One request to a provider through the global fetch (msw intercepts it in tests; Deno and Node both
 * have it). 404 is the documented "nothing known about this IP" of every provider here and resolves
 * null; any other non-2xx throws ProviderHttpError; a 2xx body that is not JSON, or longer than
 * PROVIDER_ANSWER_MAX_BYTES, throws — a failure of this provider, not of the lookup. No body is read
 * past its cap: a short one is read to its end (the connection can be reused), a longer one is
 * cancelled.
 */
export async function fetchProviderJson(provider: string, url: URL, init: RequestInit & { signal: AbortSignal }): Promise<ProviderJson | null> {
  const res = await fetch(url, init);
  if (res.status === 404) {
    // Read, not cancelled, when short: undici can then reuse the connection.
    await readBodyTextPrefix(res, ERROR_BODY_MAX_BYTES).catch(() => null);
    return null;
  }
  if (!res.ok) throw new ProviderHttpError(provider, res.status, await errorDetail(res));
  const { text, complete } = await readBodyTextPrefix(res, PROVIDER_ANSWER_MAX_BYTES);
  if (!complete) throw new Error(`${provider} answered HTTP ${res.status} with a body over ${PROVIDER_ANSWER_MAX_BYTES} bytes`);
  if (text.trim() === '') return { status: res.status, body: null };
  try {
    return { status: res.status, body: JSON.parse(text) as unknown };
  } catch {
    throw new Error(`${provider} answered HTTP ${res.status} with a body that is not JSON`);
  }
}

/** `base` (with or without a trailing slash, possibly with a path prefix) + `path`. */
export function endpoint(base: string, path: string): URL {
  return new URL(`${base.replace(/\/+$/, '')}${path}`);
}

/**
 * Guards the one value we splice into provider URLs: a caller bug must not turn into a request for an
 * arbitrary path on a paid API.
 */
export function assertIpLiteral(provider: string, ip: string): void {
  if (parseIp(ip) === null) throw new Error(`${provider}: ${JSON.stringify(ip)} is not an IP address`);
}

// The provider's own words help whoever reads the failure list; they are cut short and never
// include anything we sent. A body cut at its cap is not JSON, so its raw start is the detail.
async function errorDetail(res: Response): Promise<string | null> {
  let text: string;
  try {
    text = (await readBodyTextPrefix(res, ERROR_BODY_MAX_BYTES)).text;
  } catch {
    return null;
  }
  let detail: string | null = null;
  try {
    const body = readObject(JSON.parse(text) as unknown);
    const error = body?.error;
    detail = readString(body?.message) ?? readString(error) ?? readString(readObject(error)?.message) ?? readString(readObject(error)?.title);
  } catch {
    detail = readString(text);
  }
  return detail === null ? null : detail.slice(0, 200);
}

/** What every provider adapter takes: its API key, and a base URL to override (tests, proxies). */
export interface ProviderOptions {
  apiKey: string;
  baseUrl?: string | undefined;
}
