import { z } from '@hono/zod-openapi';
import type { Context, TypedResponse } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { isDatabaseUnavailable } from '../drivers/db.ts';
import type { Logger } from '../kernel/context.ts';
import { AppError, ERROR_CODES, type ErrorCode, genericCode } from '../kernel/errors.ts';
import type { HonoEnv } from './hono-env.ts';

/**
 * The `code` of an error body that may carry any of `codes`: an enum whose description says what
 * each means (from the one table, errors.ts), so the document tells a program what it can branch on.
 */
function codeField(codes: readonly ErrorCode[]) {
  if (!codes.length) throw new Error('an error body needs at least one code');
  return z.enum(codes as [ErrorCode, ...ErrorCode[]]).openapi({
    description: `Why, stable for programs to branch on: ${codes.map((c) => `\`${c}\` ${ERROR_CODES[c].meaning}`).join('; ')}`,
  });
}

const envelopeShape = (codes: readonly ErrorCode[]) => ({ success: z.literal(false), error: z.string(), code: codeField(codes) });

/** The plain error bodies by code set, each one named schema in the document (`NotFoundError`, `RateLimitedOrRotationLimitError`). */
const namedBodies = new Map<string, z.ZodObject<ReturnType<typeof envelopeShape>>>();
const pascal = (code: string) => code.replace(/(^|_)([a-z])/g, (_m, _u, ch: string) => ch.toUpperCase());

/** The one error body, `{ success: false, error, code }`, carrying one of `codes` (and any documented extra fields). */
export function errorBody<F extends z.ZodRawShape = Record<never, never>>(codes: readonly ErrorCode[], fields?: F) {
  if (fields && Object.keys(fields).length) return z.object({ ...envelopeShape(codes), ...fields });
  const reasons = codes.map(pascal).join('Or');
  const name = reasons.endsWith('Error') ? reasons : `${reasons}Error`;
  let body = namedBodies.get(name);
  if (!body) {
    body = z.object(envelopeShape(codes)).openapi(name);
    namedBodies.set(name, body);
  }
  return body as unknown as z.ZodObject<ReturnType<typeof envelopeShape> & F>;
}

/** A documented JSON response of `schema`. */
export const jsonAnswer = <T extends z.ZodType>(description: string, schema: T) => ({
  description,
  content: { 'application/json': { schema } },
});

/**
 * A 200 whose JSON body was written already (by Postgres: list-visitors), sent as it is and typed
 * as the response schema it was written to. Nothing checks the text here, so a route answering
 * this way has a test that parses its bodies with the documented schema.
 */
export function writtenJson<T>(c: Context, body: string): TypedResponse<T, 200, 'json'> {
  return c.body(body, 200, { 'content-type': 'application/json' }) as unknown as TypedResponse<T, 200, 'json'>;
}

/**
 * A documented error response of `description`, in the envelope, with the codes it can carry (each
 * one answered with the status it is documented under: route.ts checks) and any extra fields.
 */
export const errorResponse = (description: string, codes: readonly ErrorCode[], fields?: z.ZodRawShape) =>
  jsonAnswer(description, errorBody(codes, fields));

/** The codes an error response's body documents, or undefined when it is no error body of ours. */
export function documentedCodes(schema: unknown): ErrorCode[] | undefined {
  if (!(schema instanceof z.ZodObject)) return undefined;
  const code: unknown = schema.shape.code;
  if (!(code instanceof z.ZodEnum)) return undefined;
  return (code.options as string[]).filter((c): c is ErrorCode => c in ERROR_CODES);
}

/** The same error body (its extra fields too), documenting `codes` instead. */
export function withCodes(schema: z.ZodObject, codes: readonly ErrorCode[]): z.ZodObject {
  const { success: _success, error: _error, code: _code, ...fields } = schema.shape;
  return errorBody(codes, fields);
}

const defaultMessages: Partial<Record<number, string>> = {
  400: 'bad request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not found',
  405: 'method not allowed',
};

/**
 * The one envelope: every error leaves as `{ success: false, error, code }` (plus documented
 * extras), its status the one the table gives its code.
 */
export function renderError(err: unknown, c: Context<HonoEnv>): Response {
  if (err instanceof AppError) {
    for (const [k, v] of Object.entries(err.headers)) c.header(k, v);
    return c.json({ success: false, error: err.message, code: err.code, ...err.extra }, err.status);
  }
  if (err instanceof HTTPException && err.status < 500) {
    // Hono's own validators: malformed JSON, unreadable bodies.
    const message = err.message || defaultMessages[err.status] || 'bad request';
    return c.json({ success: false, error: message, code: genericCode(err.status) ?? 'invalid_request' }, err.status);
  }
  const deps = c.get('deps');
  if (isDatabaseUnavailable(err)) {
    if (deps) reportOutage(deps.log, err);
    c.header('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
    return c.json(
      {
        success: false,
        error: `the database cannot be reached right now; retry in ${DATABASE_RETRY_AFTER_SECONDS} s`,
        code: 'database_unavailable' satisfies ErrorCode,
      },
      503,
    );
  }
  const requestId = c.get('requestId') ?? 'unknown';
  deps?.log.error('unhandled error', {
    request_id: requestId,
    path: new URL(c.req.url).pathname,
    error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    stack: err instanceof Error ? err.stack : undefined,
  });
  return c.json({ success: false, error: `internal error, please retry (request id ${requestId})`, code: 'internal_error' satisfies ErrorCode }, 500);
}

/** What a 503 asks the client to wait: postgres.js retries each connection every second (db-postgres.ts). */
export const DATABASE_RETRY_AFTER_SECONDS = 5;
/** Unavailability errors this far apart are two outages, each logged once. */
const OUTAGE_QUIET_MS = 30_000;
/** When each logger last saw the database unavailable: one log line per outage, not one per request. */
const lastOutageSeen = new WeakMap<Logger, number>();

function reportOutage(log: Logger, err: unknown): void {
  const now = Date.now();
  const last = lastOutageSeen.get(log);
  lastOutageSeen.set(log, now);
  if (last !== undefined && now - last < OUTAGE_QUIET_MS) return;
  const code = (err as { code?: unknown }).code;
  log.warn('database unavailable: answering 503 with Retry-After until it is back', { code: String(code) });
}
