import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import type { ConnectedUserCaller, CoreDeps, KeyRecord, PartnerCaller } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';
import { BODY_TIMEOUT_MS, MAX_BODY_BYTES } from './body.ts';
import { bodyKindOf, type FunctionDefinition, type ServerOptions } from './definition.ts';
import { renderError } from './envelope.ts';
import type { FunctionApp, HonoEnv } from './hono-env.ts';
import { CORS_HEADERS, partnerCallerOf } from './policies.ts';
import { guardRequest } from './request-guard.ts';
import { requestHeader } from './request-header.ts';

/**
 * What each function's sub-app was built with: its definition, so `openapi()` can document a route
 * with its policy and body kind, and the chain every route of it runs behind (CORS, the request
 * guard, authentication, the policy's middleware), which `openapi()` puts in front of each route's
 * own path — in front of exactly the paths a route answers, so no route can be reached around it.
 */
export interface FunctionAppParts {
  def: FunctionDefinition;
  chain: MiddlewareHandler<HonoEnv>[];
  /** Paths that already run the chain (a path with several methods runs it once). */
  guarded: Set<string>;
}

const partsOf = new WeakMap<FunctionApp, FunctionAppParts>();

export function functionAppParts(app: FunctionApp): FunctionAppParts | undefined {
  return partsOf.get(app);
}

/**
 * Authenticates with the function's policy; the caller it returns is what the route acts for. A
 * caller with an account is counted for api-usage-summary: the call, and the function's metered
 * operation (in memory; account/usage-meter.ts writes the counts in batches).
 */
function authenticate(def: FunctionDefinition): MiddlewareHandler<HonoEnv> {
  return async (c, next) => {
    const caller = await def.policy.authenticate(c);
    c.set('caller', caller);
    const accountId = caller.kind === 'connected-user' ? caller.key.accountId : 'accountId' in caller ? caller.accountId : null;
    if (accountId) {
      const usage = c.get('deps').usage;
      usage.count(accountId, 'api_call');
      if (def.meteredAs) usage.count(accountId, def.meteredAs);
    }
    await next();
  };
}

/** CORS headers on every answer of a public function, errors included, and its preflights. */
const cors: MiddlewareHandler<HonoEnv> = async (c, next) => {
  for (const [k, v] of Object.entries(CORS_HEADERS)) c.header(k, v);
  if (c.req.method === 'OPTIONS') return c.body(null, 204);
  await next();
};

/** The headers a browser may send to a key endpoint from the console, and read from its answers. */
const CONSOLE_REQUEST_HEADERS = 'x-access-key, content-type, x-user-id, x-idempotency-key';
const CONSOLE_EXPOSED_HEADERS = 'x-request-id, retry-after, content-disposition';

/**
 * A console hosted apart from the API (CONSOLE_ORIGINS): a key endpoint answers a listed origin's
 * preflight, and its answers (errors included) carry that origin, so the page's fetch may read them.
 * No credentials: the key travels in a header, never a cookie. Any other origin gets nothing, so
 * its browser reads nothing.
 */
function consoleCors(method: string, origins: readonly string[]): MiddlewareHandler<HonoEnv> {
  return async (c, next) => {
    c.header('vary', 'Origin');
    const origin = requestHeader(c, 'origin');
    if (origin === undefined || !origins.includes(origin)) return next();
    c.header('access-control-allow-origin', origin);
    c.header('access-control-expose-headers', CONSOLE_EXPOSED_HEADERS);
    if (c.req.method === 'OPTIONS' && requestHeader(c, 'access-control-request-method') !== undefined) {
      c.header('access-control-allow-methods', method);
      c.header('access-control-allow-headers', CONSOLE_REQUEST_HEADERS);
      c.header('access-control-max-age', '600');
      return c.body(null, 204);
    }
    await next();
  };
}

/** One function's sub-app: its guard, its policy, then the route. Mounted only by createApiServer, whose error handler it relies on. */
function createFunctionApp(def: FunctionDefinition, opts: ServerOptions, consoleOrigins: readonly string[]): FunctionApp {
  // No onError here: the server's own renders every error. A sub-app with its own error handler
  // makes Hono wrap each of its middlewares and its handler in a further compose() when mounted.
  const app = new OpenAPIHono<HonoEnv>();
  const guard = guardRequest({
    name: def.name,
    method: def.method,
    body: bodyKindOf(def),
    cors: def.policy.cors,
    maxBytes: MAX_BODY_BYTES,
    timeoutMs: opts.bodyTimeoutMs ?? BODY_TIMEOUT_MS,
    readBody: opts.readBody,
  });
  // Only a key endpoint, and only when the operator named the console's origins: otherwise no cost at all.
  const takesKey = def.policy.security.some((scheme) => 'AccessKey' in scheme);
  const fromConsole = !def.policy.cors && takesKey && consoleOrigins.length > 0 ? [consoleCors(def.method, consoleOrigins)] : [];
  const chain = [...(def.policy.cors ? [cors] : []), ...fromConsole, guard, authenticate(def), ...def.policy.middleware];
  partsOf.set(app, { def, chain, guarded: new Set() });
  def.register(app);
  return app;
}

/**
 * The whole API for a set of functions: request ids, injected dependencies, the error envelope,
 * and each function mounted at its spec path. The Node host mounts every function; a Supabase
 * entrypoint mounts just its own.
 */
export function createApiServer(deps: CoreDeps, defs: FunctionDefinition[], opts: ServerOptions): FunctionApp {
  const app = new OpenAPIHono<HonoEnv>();
  app.use('*', async (c, next) => {
    c.set('deps', deps);
    const incoming = requestHeader(c, 'x-request-id');
    const requestId = incoming && /^[\w.-]{1,100}$/.test(incoming) ? incoming : crypto.randomUUID();
    c.set('requestId', requestId);
    // Before the response exists, so every c.json (errors included) carries it. Setting it after
    // made @hono/node-server turn its lightweight response into a full undici Response with a web
    // stream: a fifth of the CPU of a cached lookup.
    c.header('x-request-id', requestId);
    await next();
  });
  app.onError(renderError);
  app.notFound((c) => renderError(notFound(`no endpoint at ${new URL(c.req.url).pathname}`), c));
  for (const def of defs) {
    const prefix = def.mount === 'functions' ? opts.functionsPrefix : '';
    app.route(`${prefix}/${def.name}`, createFunctionApp(def, opts, deps.consoleOrigins));
  }
  return app;
}

/** The verb context for a request under a partner policy. */
export function partnerCtx(c: Context<HonoEnv>): CoreDeps & { caller: PartnerCaller } {
  return { ...c.get('deps'), caller: partnerCallerOf(c) };
}

/** The key behind a request under a key policy (account key, tracker owner, partner, connected user). */
export function callerKey(c: Context<HonoEnv>): KeyRecord {
  const caller = c.get('caller');
  if (caller.kind === 'partner' || caller.kind === 'account-key') return caller;
  if (caller.kind === 'connected-user') return caller.key;
  throw new Error(`a key verb was called for a ${caller.kind} caller`);
}

/** The connected user behind a request under a connected-user policy. */
export function connectedUserOf(c: Context<HonoEnv>): ConnectedUserCaller {
  const caller = c.get('caller');
  if (caller.kind !== 'connected-user') throw new Error(`a connected-user route ran for a ${caller.kind} caller`);
  return caller;
}

/** The same under `idempotentConnectedUser`, whose policy has already required the key. */
export function idempotentUserOf(c: Context<HonoEnv>): ConnectedUserCaller & { idempotencyKey: string } {
  const caller = connectedUserOf(c);
  const { idempotencyKey } = caller;
  if (!idempotencyKey) throw new Error('an idempotent route ran without x-idempotency-key');
  return { ...caller, idempotencyKey };
}
