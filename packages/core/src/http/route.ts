import type { RouteConfig, RouteHandler } from '@hono/zod-openapi';
import type { Context, Handler, MiddlewareHandler } from 'hono';
import { type ZodType, z } from 'zod';
import { AppError, type ErrorCode, errorCodes, statusOf } from '../kernel/errors.ts';
import { describeValidationIssues } from '../kernel/schemas.ts';
import { findUnstorableText, UNSTORABLE_TEXT_MESSAGE } from '../kernel/storable-text.ts';
import { BODY_TIMEOUT_MS, MAX_BODY_BYTES } from './body.ts';
import { bodyKindOf, type FunctionDefinition } from './definition.ts';
import { documentedCodes, errorResponse, withCodes } from './envelope.ts';
import type { FunctionApp, HonoEnv } from './hono-env.ts';
import { requestHeader } from './request-header.ts';
import { functionAppParts } from './server.ts';

type Schema = ZodType<unknown>;
type ObjectSchema = Schema & { shape: Record<string, unknown> };

/**
 * Registers a function's documented route: its entry in the OpenAPI document — with the errors,
 * headers and security its policy and body guard add, so the document says what the runtime does —
 * one synchronous check of the request against the route's zod schemas (body, query, path
 * parameters, headers), then the handler, which reads the result with `c.req.valid(...)`.
 *
 * zod-openapi's own `app.openapi` checks the same schemas, but through a media-type gate and an
 * async validator per target that re-reads headers and the body cache and awaits `safeParseAsync`:
 * about a tenth of the CPU of a cached ip-to-company lookup. The request guard has already refused
 * a wrong Content-Type and read the body, so what is left is to parse and check it.
 */
export function openapi<R extends RouteConfig>(app: FunctionApp, route: R, handler: RouteHandler<R, HonoEnv>): void {
  const parts = functionAppParts(app);
  if (!parts) throw new Error(`${route.method} ${route.path}: openapi() registers routes of a function's own app (createApiServer)`);
  const { def } = parts;
  // `/t/{id}.js` would become Hono's parameter `id.js`: a parameter must fill its path segment.
  if (/\{[^}]+\}[^/]/.test(route.path)) throw new Error(`${route.method} ${route.path}: a path parameter must be a whole path segment`);
  // What our functions declare is all this checks; anything else would go unchecked, so refuse it.
  if (route.request?.cookies || route.middleware || route.hide) {
    throw new Error(
      `${route.method} ${route.path}: openapi() does not handle ${[route.request?.cookies ? 'cookies' : '', route.middleware ? 'middleware' : '', route.hide ? 'hide' : ''].filter(Boolean).join(', ')}`,
    );
  }
  const media = route.request?.body?.content?.['application/json'];
  const schema: unknown = media && 'schema' in media ? media.schema : undefined;
  const body = isSchema(schema) ? schema : undefined;
  if (route.request?.body && !body) throw new Error(`${route.method} ${route.path}: a request body must be an application/json zod schema`);
  if (body && bodyKindOf(def) === 'none') throw new Error(`${def.name}: a route with a body needs a function whose body kind is json or text-json`);
  const query = asSchema(route.request?.query, 'query', route);
  const params = asSchema(route.request?.params, 'params', route) as ObjectSchema | undefined;
  const headers = asSchema(route.request?.headers, 'headers', route) as ObjectSchema | undefined;
  app.openAPIRegistry.registerPath(documented(route, def, Boolean(body || query || params || headers)));
  // OpenAPI writes path parameters `{name}`; Hono routes them as `:name`.
  const path = route.path.replace(/\{([^}]+)\}/g, ':$1');
  if (!parts.guarded.has(path)) {
    parts.guarded.add(path);
    app.use(path, ...parts.chain);
  }
  const method = route.method.toUpperCase();
  const run = handler as unknown as Handler<HonoEnv>;
  // A route with nothing to check (partner-pool-state) runs without the step: each step is one more
  // layer of Hono's compose on the hottest reads.
  if (body || query || params || headers) app.on(method, path, validateInput({ body, query, params, headers }), run);
  else app.on(method, path, run);
}

function isSchema(value: unknown): value is Schema {
  return typeof (value as Partial<Schema> | undefined)?.safeParse === 'function';
}

function asSchema(value: unknown, part: string, route: RouteConfig): Schema | undefined {
  if (value === undefined) return undefined;
  if (!isSchema(value)) throw new Error(`${route.method} ${route.path}: request ${part} must be a zod schema`);
  return value;
}

/**
 * The route as the document shows it: its own responses, then what the function's policy and body
 * guard can answer (a route's own description of a status wins), and the policy's security,
 * request headers and response headers.
 */
function documented(route: RouteConfig, def: FunctionDefinition, validates: boolean): RouteConfig {
  const errors = guardedErrors(def, validates);
  const responses: RouteConfig['responses'] = {};
  for (const [status, { description, codes }] of Object.entries(errors)) responses[status] = errorResponse(description, codes);
  for (const [status, response] of Object.entries(route.responses)) {
    responses[status] = Number(status) >= 400 ? withGuardedCodes(route, status, response, errors[status]?.codes ?? []) : response;
  }
  const extraHeaders = def.policy.responseHeaders ?? {};
  for (const [status, response] of Object.entries(responses)) {
    // `default` headers come from the policy's middleware, so not on what is answered before it runs.
    const named = {
      ...(ANSWERED_BEFORE_POLICY_MIDDLEWARE.has(status) ? {} : extraHeaders.default),
      ...(status === '503' ? { 'Retry-After': 'Seconds to wait before retrying' } : {}),
      ...extraHeaders[status],
    };
    if (!Object.keys(named).length || !('description' in response)) continue;
    responses[status] = {
      ...response,
      headers: Object.fromEntries(Object.entries(named).map(([h, description]) => [h, { description, schema: { type: 'string' } }])),
    };
  }
  const policyHeaders = def.policy.headers;
  const routeHeaders = route.request?.headers as ObjectSchema | undefined;
  const requestHeaders = policyHeaders && routeHeaders ? policyHeaders.extend(routeHeaders.shape) : (policyHeaders ?? routeHeaders);
  const routeBody = route.request?.body;
  const json = routeBody?.content['application/json'];
  // A beacon's body is documented under both media types it may arrive as.
  const body =
    bodyKindOf(def) === 'text-json' && routeBody && json ? { ...routeBody, content: { 'text/plain': json, ...routeBody.content } } : routeBody;
  const request = { ...route.request, ...(body ? { body } : {}), ...(requestHeaders ? { headers: requestHeaders } : {}) } as RouteConfig['request'];
  return { ...route, request, responses, security: def.policy.security };
}

/**
 * A route's own error response, documenting also the codes its function's guards answer with the
 * same status (the route's description wins). Every code the route lists must be one answered with
 * that status, and every error response must document its codes (errorResponse).
 */
function withGuardedCodes(route: RouteConfig, status: string, response: ResponseOf<RouteConfig>, guarded: readonly ErrorCode[]) {
  const where = `${route.method} ${route.path} ${status}`;
  if (!('content' in response)) throw new Error(`${where}: an error response is a JSON error body (errorResponse)`);
  const media = response.content?.['application/json'];
  const schema: unknown = media && 'schema' in media ? media.schema : undefined;
  const own = documentedCodes(schema);
  if (!own || !(schema instanceof z.ZodObject)) throw new Error(`${where}: an error response documents its codes (errorResponse)`);
  const misplaced = own.filter((code) => String(statusOf(code)) !== status);
  if (misplaced.length) throw new Error(`${where}: ${misplaced.join(', ')} is answered with another status`);
  const missing = guarded.filter((code) => !own.includes(code));
  if (!missing.length) return response;
  const codes = errorCodes.filter((code) => own.includes(code) || missing.includes(code));
  return { ...response, content: { 'application/json': { schema: withCodes(schema, codes) } } };
}

type ResponseOf<R extends RouteConfig> = R['responses'][string];

/** An error answer a function can give whatever its route does: what it means, and the codes it carries. */
export interface GuardedError {
  description: string;
  codes: ErrorCode[];
}

/**
 * The error answers a function can give before or around its route, whatever the route does: its
 * policy's, its body guard's, a wrong method, an unexpected failure; and a validation error when
 * the route checks any input. By status, with the codes each carries (the table in errors.ts gives
 * every code its status). The document lists them; the contract test makes each happen.
 */
export function guardedErrors(def: FunctionDefinition, validates: boolean): Record<string, GuardedError> {
  const kind = bodyKindOf(def);
  const errors: Record<string, GuardedError> = {};
  // A later description of a status wins (a policy's over the generic validation one); the codes add up.
  const add = (code: ErrorCode, description: string) => {
    const status = String(statusOf(code));
    const codes = errors[status]?.codes ?? [];
    errors[status] = { description, codes: codes.includes(code) ? codes : [...codes, code] };
  };
  if (validates || kind !== 'none') add('invalid_request', 'Validation error: missing required field or malformed value');
  for (const [code, description] of Object.entries(def.policy.errors) as [ErrorCode, string | undefined][]) if (description) add(code, description);
  add('method_not_allowed', 'Wrong HTTP method');
  if (kind !== 'none') {
    add('request_timeout', `Request body still incomplete ${BODY_TIMEOUT_MS / 1000} s after the headers (the connection is closed)`);
    add('payload_too_large', `Request body over ${MAX_BODY_BYTES} bytes`);
  }
  add('internal_error', 'Internal error; retry');
  if (def.readsDatabase !== false) add('database_unavailable', 'The database cannot be reached right now; retry after Retry-After seconds');
  return errors;
}

/** Statuses the request guard and authentication answer, before a policy's middleware runs (or a 500, anywhere). */
const ANSWERED_BEFORE_POLICY_MIDDLEWARE = new Set(['401', '403', '405', '408', '413', '500', '503']);

function validateInput(parts: { body?: Schema; query?: Schema; params?: ObjectSchema; headers?: ObjectSchema }): MiddlewareHandler<HonoEnv> {
  const { body, query, params, headers } = parts;
  return (c, next) => {
    if (body) {
      let value: unknown;
      try {
        value = JSON.parse(c.get('bodyText'));
      } catch {
        throw new AppError('invalid_request', 'the request body is not valid JSON');
      }
      c.req.addValidatedData('json', checked(body, value));
    }
    if (query) {
      // One value per parameter as a string, a repeated one as the list of its values.
      const raw: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(c.req.queries())) raw[k] = v.length === 1 ? (v[0] as string) : v;
      c.req.addValidatedData('query', checked(query, raw));
    }
    if (params) c.req.addValidatedData('param', checked(params, c.req.param()));
    if (headers) c.req.addValidatedData('header', checked(headers, namedHeaders(c, headers)));
    return next();
  };
}

/** Only the headers a schema names (lower-case, as HTTP/2 and Hono give them), absent ones left out. */
function namedHeaders(c: Context<HonoEnv>, schema: ObjectSchema): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(schema.shape)) {
    const value = requestHeader(c, name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function checked(schema: Schema, value: unknown): object {
  // Before the schema, once for every field of every route, so no text field can forget it.
  const unstorable = findUnstorableText(value);
  if (unstorable) throw new AppError('invalid_request', `${unstorable}: ${UNSTORABLE_TEXT_MESSAGE}`);
  const result = schema.safeParse(value);
  if (!result.success) throw new AppError('invalid_request', describeValidationIssues(result.error.issues));
  return result.data as object;
}
