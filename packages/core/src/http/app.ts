import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Caller, CoreDeps, PartnerCtx } from '../context.ts';
import { AppError } from '../errors.ts';
import { authenticateKey, authenticatePartner } from '../verbs/auth.ts';
import { assertPoolHasIds } from '../verbs/ledger.ts';
import { dispatchNewEvents } from '../webhooks/delivery.ts';

/**
 * Read variables with `c.get(name)`, never `c.var`: Hono's `c.var` getter builds a fresh object
 * from the variable map on every access, which was a tenth of a cached lookup's CPU.
 */
export type HonoEnv = {
  Variables: {
    deps: CoreDeps;
    requestId: string;
    caller: Caller;
    /** A POST's body as text, read once by the request guard; route.ts parses and checks it. */
    bodyText: string;
  };
};
export type FunctionApp = OpenAPIHono<HonoEnv>;

/** One documented endpoint: a thin transport registered at `/` of its own sub-app. */
export interface FunctionDefinition {
  /** The spec's endpoint name; also the URL segment and the Supabase function name. */
  name: string;
  /** `functions` → {base_url}/<name>; `root` → {api_url}/<name>. */
  mount: 'functions' | 'root';
  method: 'GET' | 'POST';
  /** `partner`: the designated master key of a partner account; `key`: any active key. */
  auth: 'partner' | 'key';
  /**
   * Partner routes pass the API-wide rate limit and the out-of-IDs 402 guard unless exempt
   * (partner-pool-state is: it is how a partner finds out why everything else says 402).
   */
  exemptFromPartnerLimits?: boolean;
  /** Identifies IPs: a host serving it alone (a Supabase function) loads the local IP data. */
  usesIpData?: boolean;
  register(app: FunctionApp): void;
}

export interface ServerOptions {
  /** Where `functions` endpoints live: `/functions/v1` on the Node host, `` behind the Supabase gateway. */
  functionsPrefix: string;
  /** How long a request body may take to arrive once its headers have (default BODY_TIMEOUT_MS). */
  bodyTimeoutMs?: number;
}

/**
 * Bodies are at most 64 KiB: one still arriving after this is stalled (a Content-Length larger
 * than what is sent, a client that went quiet), and holding it would hold a connection for as long
 * as Node's request timeout. It is answered 408 and the connection closed.
 */
export const BODY_TIMEOUT_MS = 10_000;

type ZodIssueLike = { path: PropertyKey[]; message: string; code?: string };

/** Turns zod issues into one sentence a developer can act on. */
export function describeValidationIssues(issues: readonly ZodIssueLike[]): string {
  const parts = issues.slice(0, 5).map((i) => {
    const field = i.path.map(String).join('.') || 'body';
    if (i.code === 'invalid_type' && /received undefined/.test(i.message)) return `${field} is required`;
    if (i.code === 'unrecognized_keys') return i.message.replace(/^Unrecognized keys?/, 'unknown field(s)');
    return `${field}: ${i.message}`;
  });
  return parts.join('; ');
}

const defaultMessages: Record<number, string> = {
  400: 'bad request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not found',
  405: 'method not allowed',
};

/** The one envelope: every error leaves as `{ success: false, error }` (plus documented extras). */
export function renderError(err: unknown, c: Context<HonoEnv>): Response {
  if (err instanceof AppError) {
    for (const [k, v] of Object.entries(err.headers)) c.header(k, v);
    return c.json({ success: false, error: err.message, ...err.extra }, err.status);
  }
  if (err instanceof HTTPException && err.status < 500) {
    // Hono's own validators: malformed JSON, unreadable bodies.
    const message = err.message || defaultMessages[err.status] || 'bad request';
    return c.json({ success: false, error: message }, err.status);
  }
  const requestId = c.get('requestId') ?? 'unknown';
  const deps = c.get('deps');
  deps?.log.error('unhandled error', {
    request_id: requestId,
    path: new URL(c.req.url).pathname,
    error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    stack: err instanceof Error ? err.stack : undefined,
  });
  return c.json({ success: false, error: `internal error, please retry (request id ${requestId})` }, 500);
}

// The media types @hono/zod-openapi's JSON validator accepts, so the guard's 400 and the route
// agree (a looser test here let `application/json ;x` through to the validator's 415).
const JSON_CONTENT_TYPE = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;

function guardRequest(def: FunctionDefinition, bodyTimeoutMs: number): MiddlewareHandler<HonoEnv> {
  const allowed = def.method === 'GET' ? ['GET', 'HEAD'] : [def.method];
  return async (c, next) => {
    if (!allowed.includes(c.req.method)) {
      throw new AppError(405, `${c.req.method} is not allowed on ${def.name}; use ${def.method}`, {}, {
        Allow: allowed.join(', '),
      });
    }
    if (def.method === 'POST') {
      const type = c.req.header('content-type') ?? '';
      if (!JSON_CONTENT_TYPE.test(type)) {
        throw new AppError(400, 'the request body must be JSON with Content-Type: application/json');
      }
      // Read once, bounded. Hono's body cache gets it too, so `c.req.text()`/`json()` still work
      // after the stream is spent (the cache holds promises at run time, whatever its type says).
      const text = await readBodyText(c, MAX_BODY_BYTES, bodyTimeoutMs);
      c.set('bodyText', text);
      c.req.bodyCache.text = Promise.resolve(text) as unknown as string;
    }
    await next();
  };
}

/** Every request body the API accepts is a small JSON object; anything bigger is refused unread. */
export const MAX_BODY_BYTES = 64 * 1024;

/** What the body reader needs of Node's IncomingMessage (the `incoming` binding of @hono/node-server). */
interface NodeIncoming {
  on(event: string, listener: (arg: never) => void): unknown;
  removeListener(event: string, listener: (arg: never) => void): unknown;
  readableEnded?: boolean;
  destroyed?: boolean;
  /** Set by Node's parser once the whole message, body included, has been received. */
  complete?: boolean;
  readableLength?: number;
  read?(): Uint8Array | null;
}

function nodeIncoming(env: unknown): NodeIncoming | undefined {
  const incoming = (env as { incoming?: unknown } | undefined)?.incoming;
  return incoming && typeof incoming === 'object' && 'on' in incoming && 'removeListener' in incoming ? (incoming as NodeIncoming) : undefined;
}

/** A client that hangs up mid-body made the mistake; it is not a server error worth a stack trace. */
const cutOff = () => new AppError(400, 'the request body was cut off before it ended');

/** `Connection: close`: the rest of a stalled body may still come, and must not be read as a next request. */
const stalled = (ms: number) =>
  new AppError(408, `the request body did not arrive within ${ms / 1000} s`, {}, { Connection: 'close' });

/**
 * Node: data/end events, which cost less per request than an async iterator over the stream. Every
 * way the stream can stop settles the promise: end, error (a reset), and close without an end (an
 * abort whose error nobody was listening for yet).
 */
function readNodeBody(incoming: NodeIncoming, limit: number, timeoutMs: number, tooLarge: () => AppError): Promise<Uint8Array[]> {
  if (incoming.readableEnded) return Promise.resolve([]);
  if (incoming.destroyed) return Promise.reject(cutOff());
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (incoming.complete && incoming.read) {
    // A small body has usually arrived with its headers: the parser has finished the message and
    // holds all of it, so one synchronous read takes it without subscribing to the stream. (Its
    // 'end' still follows, which is what @hono/node-server waits for before it would drain.)
    const all = incoming.read();
    if (all) {
      chunks.push(all);
      size = all.byteLength;
    }
    if (size > limit) return Promise.reject(tooLarge());
    if (!incoming.readableLength) return Promise.resolve(chunks);
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(stalled(timeoutMs)), timeoutMs);
    const finish = (err?: AppError) => {
      clearTimeout(timer);
      incoming.removeListener('data', onData);
      incoming.removeListener('end', onEnd);
      incoming.removeListener('error', onError);
      incoming.removeListener('close', onClose);
      if (err) reject(err);
      else resolve(chunks);
    };
    const onData = (chunk: Uint8Array) => {
      size += chunk.byteLength;
      if (size > limit) finish(tooLarge());
      else chunks.push(chunk);
    };
    const onEnd = () => finish();
    const onError = () => finish(cutOff());
    const onClose = () => finish(incoming.readableEnded ? undefined : cutOff());
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}

/**
 * The body as UTF-8 text, at most `limit` bytes (413 past it, 400 if not UTF-8). On Node it reads
 * the raw IncomingMessage: going through the WHATWG Request instead builds an undici Request, an
 * AbortController and a web stream per call, which cost more than the rest of a cached lookup.
 */
async function readBodyText(c: Context<HonoEnv>, limit: number, timeoutMs: number): Promise<string> {
  const tooLarge = () => new AppError(413, `the request body must be at most ${limit} bytes`);
  const declared = Number(c.req.header('content-length') ?? '0');
  if (declared > limit) throw tooLarge();
  const incoming = nodeIncoming(c.env);
  let chunks: Uint8Array[] = [];
  let size = 0;
  if (incoming) {
    chunks = await readNodeBody(incoming, limit, timeoutMs, tooLarge);
    for (const chunk of chunks) size += chunk.byteLength;
  } else {
    const reader = c.req.raw.body?.getReader();
    let timedOut = false;
    // Cancelling makes the pending read() settle as done, so the loop ends; the flag tells a stall
    // from the body's real end.
    const timer = setTimeout(() => {
      timedOut = true;
      void reader?.cancel().catch(() => undefined);
    }, timeoutMs);
    try {
      for (;;) {
        const next = reader ? await reader.read() : { done: true as const, value: undefined };
        if (next.done) break;
        size += next.value.byteLength;
        if (size > limit) throw tooLarge();
        chunks.push(next.value);
      }
    } finally {
      clearTimeout(timer);
    }
    if (timedOut) throw stalled(timeoutMs);
  }
  const bytes = chunks.length === 1 ? (chunks[0] as Uint8Array) : concatBytes(chunks, size);
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new AppError(400, 'the request body is not valid UTF-8');
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function concatBytes(chunks: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/**
 * A partner action may change keys (rotate, release, suspend, adopt): this process's auth cache is
 * cleared before the response leaves, so nothing here can accept a key the client has been told
 * is gone. Other processes hear of it from the database (auth-cache.ts).
 */
function forgetCachedKeys(): MiddlewareHandler<HonoEnv> {
  return async (c, next) => {
    try {
      await next();
    } finally {
      c.get('deps').authCache?.invalidateAll();
    }
  };
}

/**
 * After a partner action commits, its events' first delivery attempts start in the background: the
 * response never waits for them and a slow or failing receiver never fails the action.
 */
function dispatchAfterAction(): MiddlewareHandler<HonoEnv> {
  return async (c, next) => {
    await next();
    const caller = c.get('caller');
    if (c.res.status < 400 && caller) {
      const deps = c.get('deps');
      const partnerAccountId = caller.accountId;
      deps.background('webhooks', () => dispatchNewEvents({ ctx: deps, input: { partnerAccountId } }));
    }
  };
}

function authenticate(def: FunctionDefinition): MiddlewareHandler<HonoEnv> {
  return async (c, next) => {
    const args = { ctx: c.get('deps'), input: { key: c.req.header('x-access-key') } };
    const caller = def.auth === 'partner' ? await authenticatePartner(args) : await authenticateKey(args);
    c.set('caller', caller);
    await next();
  };
}

/**
 * The API-wide rate limit, then the out-of-IDs guard. A refused request is refused before any work,
 * so it changes nothing. Headers follow the IETF RateLimit fields draft.
 */
function partnerLimits(): MiddlewareHandler<HonoEnv> {
  return async (c, next) => {
    const deps = c.get('deps');
    const caller = c.get('caller');
    const d = await deps.rateLimiter.hit(caller.apiKeyId);
    const headers = {
      'RateLimit-Policy': `"partner";q=${d.limit};w=${d.windowSeconds}`,
      RateLimit: `"partner";r=${d.remaining};t=${d.resetSeconds}`,
    };
    if (!d.allowed) {
      throw new AppError(429, `rate limit of ${d.limit} requests per ${d.windowSeconds} s reached; retry in ${d.resetSeconds} s`, {}, {
        ...headers,
        'Retry-After': String(d.resetSeconds),
      });
    }
    await assertPoolHasIds({ ctx: deps, input: { accountId: caller.accountId } });
    // Hono's compose turns an error thrown further in into a response, so this runs for those too.
    await next();
    for (const [k, v] of Object.entries(headers)) c.header(k, v);
  };
}

/** The verb context for a request on a partner route. */
export function partnerCtx(c: Context<HonoEnv>): PartnerCtx {
  return { ...c.get('deps'), caller: c.get('caller') };
}

/** One function's sub-app: method and content-type guard, authentication, then the route. Mounted only by createApiServer, whose error handler it relies on. */
function createFunctionApp(def: FunctionDefinition, bodyTimeoutMs: number): FunctionApp {
  // No onError here: the server's own renders every error. A sub-app with its own error handler
  // makes Hono wrap each of its middlewares and its handler in a further compose() when mounted.
  const app = new OpenAPIHono<HonoEnv>();
  app.use('/', guardRequest(def, bodyTimeoutMs), authenticate(def));
  if (def.auth === 'partner' && !def.exemptFromPartnerLimits) app.use('/', partnerLimits());
  if (def.auth === 'partner' && def.method === 'POST') app.use('/', forgetCachedKeys(), dispatchAfterAction());
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
    const incoming = c.req.header('x-request-id');
    const requestId = incoming && /^[\w.-]{1,100}$/.test(incoming) ? incoming : crypto.randomUUID();
    c.set('requestId', requestId);
    c.set('deps', deps);
    // Before the response exists, so every c.json (errors included) carries it. Setting it after
    // made @hono/node-server turn its lightweight response into a full undici Response with a web
    // stream: a fifth of the CPU of a cached lookup.
    c.header('x-request-id', requestId);
    await next();
  });
  app.onError(renderError);
  app.notFound((c) => c.json({ success: false, error: `no endpoint at ${new URL(c.req.url).pathname}` }, 404));
  for (const def of defs) {
    const prefix = def.mount === 'functions' ? opts.functionsPrefix : '';
    app.route(`${prefix}/${def.name}`, createFunctionApp(def, opts.bodyTimeoutMs ?? BODY_TIMEOUT_MS));
  }
  return app;
}
