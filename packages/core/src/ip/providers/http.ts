import { parseIp } from '../../net/ip.ts';
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
 * One request to a provider through the global fetch (msw intercepts it in tests; Deno and Node both
 * have it). 404 is the documented "nothing known about this IP" of every provider here and resolves
 * null; any other non-2xx throws ProviderHttpError; a 2xx body that is not JSON throws.
 */
export async function fetchProviderJson(provider: string, url: URL, init: RequestInit & { signal: AbortSignal }): Promise<ProviderJson | null> {
  const res = await fetch(url, init);
  if (res.status === 404) {
    // Drained rather than cancelled: undici can reuse the connection, and cancel() never settled under msw.
    await res.text().catch(() => '');
    return null;
  }
  if (!res.ok) throw new ProviderHttpError(provider, res.status, await errorDetail(res));
  const text = await res.text();
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
// include anything we sent.
async function errorDetail(res: Response): Promise<string | null> {
  let text: string;
  try {
    text = await res.text();
  } catch {
    return null;
  }
  let detail: string | null = null;
  try {
    const body = readObject(JSON.parse(text) as unknown);
    const error = body?.['error'];
    detail = readString(body?.['message']) ?? readString(error) ?? readString(readObject(error)?.['message']) ?? readString(readObject(error)?.['title']);
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
