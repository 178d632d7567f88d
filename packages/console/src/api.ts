/**
 * The console's one way to the API: every call carries the session's key in `x-access-key` and
 * answers the body, or throws ApiError with the API's own message (`error`) and `code`, so a page
 * shows why a call failed in the API's words.
 */

/** Where the functions are (the spec's `{base_url}`): the page's `<meta name="sightline-api">`, relative to the page. */
export function apiBase(): string {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="sightline-api"]');
  const configured = meta?.content || '/functions/v1';
  return new URL(configured.replace(/\/?$/, '/'), location.href).href;
}

/** The service root (the spec's `{api_url}`), where the tracker script is served. */
export function apiRoot(): string {
  return apiBase().replace(/functions\/v1\/$/, '');
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | undefined,
    readonly body: Record<string, unknown>,
  ) {
    super(message);
  }
}

type Query = Record<string, string | number | boolean | undefined | null>;

export interface CallOptions {
  query?: Query;
  body?: unknown;
}

export async function call<T>(key: string, name: string, opts: CallOptions = {}): Promise<T> {
  const url = new URL(name, apiBase());
  for (const [k, v] of Object.entries(opts.query ?? {})) {
    if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v));
  }
  const headers: Record<string, string> = { 'x-access-key': key };
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(url, { method: body === undefined ? 'GET' : 'POST', headers, body, credentials: 'omit', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'The API could not be reached; check the connection and try again.', undefined, {});
  }
  let parsed: Record<string, unknown> = {};
  try {
    parsed = (await res.json()) as Record<string, unknown>;
  } catch {
    // Not JSON (a proxy's page): the status says enough.
  }
  if (!res.ok || parsed.success === false) {
    const message = typeof parsed.error === 'string' ? parsed.error : `The API answered ${res.status}.`;
    throw new ApiError(res.status, message, typeof parsed.code === 'string' ? parsed.code : undefined, parsed);
  }
  return parsed as T;
}
