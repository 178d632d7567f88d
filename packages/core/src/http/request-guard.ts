import type { MiddlewareHandler } from 'hono';
import { AppError } from '../kernel/errors.ts';
import { bodyLimits, type HostBodyReader, readBodyText } from './body.ts';
import type { BodyKind } from './definition.ts';
import type { HonoEnv } from './hono-env.ts';
import { requestHeader } from './request-header.ts';

// The media types @hono/zod-openapi's JSON validator accepts, so the guard's 400 and the route
// agree (a looser test here let `application/json ;x` through to the validator's 415).
const JSON_CONTENT_TYPE = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;
const TEXT_CONTENT_TYPE = /^text\/plain(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;

export interface GuardOptions {
  name: string;
  method: 'GET' | 'POST';
  body: BodyKind;
  /** A browser may preflight it (CORS): OPTIONS is answered by the policy, not refused here. */
  cors: boolean;
  maxBytes: number;
  timeoutMs: number;
  readBody: HostBodyReader | undefined;
}

/** The methods a function answers to, as its 405's Allow header lists them. */
export function allowedMethods(method: 'GET' | 'POST', cors: boolean): string[] {
  const base = method === 'GET' ? ['GET', 'HEAD'] : [method];
  return cors ? [...base, 'OPTIONS'] : base;
}

/**
 * Method, then content type, then the body, read once and bounded, before anything else runs (so a
 * wrong method is a 405 whether or not a key was sent). The body kind is the route's declaration,
 * not a guess from the method.
 */
export function guardRequest(opts: GuardOptions): MiddlewareHandler<HonoEnv> {
  const allowed = allowedMethods(opts.method, opts.cors);
  const limits = bodyLimits(opts.maxBytes, opts.timeoutMs);
  return async (c, next) => {
    if (!allowed.includes(c.req.method)) {
      throw new AppError(
        'method_not_allowed',
        `${c.req.method} is not allowed on ${opts.name}; use ${opts.method}`,
        {},
        { Allow: allowed.join(', ') },
      );
    }
    if (opts.body !== 'none' && c.req.method === opts.method) {
      const type = requestHeader(c, 'content-type') ?? '';
      const json = JSON_CONTENT_TYPE.test(type);
      if (opts.body === 'json' && !json) {
        throw new AppError('invalid_request', 'the request body must be JSON with Content-Type: application/json');
      }
      if (opts.body === 'text-json' && !json && !TEXT_CONTENT_TYPE.test(type)) {
        throw new AppError('invalid_request', 'the request body must be JSON, sent as text/plain or application/json');
      }
      const text = await readBodyText(c, limits, opts.readBody);
      c.set('bodyText', text);
      // Hono's body cache gets it too, so `c.req.text()`/`json()` still work after the stream is
      // spent (the cache holds promises at run time, whatever its type says).
      c.req.bodyCache.text = Promise.resolve(text) as unknown as string;
    }
    await next();
  };
}
