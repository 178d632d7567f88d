import type { HostBodyReader } from './body.ts';
import type { FunctionApp } from './hono-env.ts';
import type { Policy } from './policies.ts';

/**
 * What a route's request body is:
 * - `json`: `Content-Type: application/json` (or `+json`), required;
 * - `text-json`: JSON sent as `text/plain` (or JSON), as `navigator.sendBeacon` sends it without a
 *   CORS preflight;
 * - `none`: no body is read (a GET, or a POST that takes nothing).
 */
export type BodyKind = 'json' | 'text-json' | 'none';

/** One documented endpoint: a thin transport registered at `/` of its own sub-app. */
export interface FunctionDefinition {
  /** The spec's endpoint name; also the URL segment and the Supabase function name. */
  name: string;
  /** `functions` → {base_url}/<name>; `root` → {api_url}/<name>. */
  mount: 'functions' | 'root';
  method: 'GET' | 'POST';
  /** Who may call it and what guards it (http/policies.ts). */
  policy: Policy;
  /** Defaults to `json` for POST and `none` for GET. */
  body?: BodyKind;
  /**
   * The operation api-usage-summary counts each authenticated call under (`by_operation`), beside
   * `api_calls`; absent: counted as an API call only (the verb counts what it does, if anything).
   */
  meteredAs?: string;
  /** Identifies IPs: a host serving it alone (a Supabase function) loads the local IP data. */
  usesIpData?: boolean;
  /** False for a function that answers without the database (a static script or page): it has no 503. */
  readsDatabase?: false;
  register(app: FunctionApp): void;
}

export const bodyKindOf = (def: Pick<FunctionDefinition, 'method' | 'body'>): BodyKind => def.body ?? (def.method === 'POST' ? 'json' : 'none');

export interface ServerOptions {
  /** Where `functions` endpoints live: `/functions/v1` on the Node host, `` behind the Supabase gateway. */
  functionsPrefix: string;
  /** How long a request body may take to arrive once its headers have (default BODY_TIMEOUT_MS). */
  bodyTimeoutMs?: number;
  /** The host's own way to read a body, faster than the web stream where it has one (Node). */
  readBody?: HostBodyReader;
}
