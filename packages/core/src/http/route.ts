import type { RouteConfig, RouteHandler } from '@hono/zod-openapi';
import type { Handler, MiddlewareHandler } from 'hono';
import type { ZodType } from 'zod';
import { AppError } from '../errors.ts';
import { describeValidationIssues, type FunctionApp, type HonoEnv } from './app.ts';
import { findUnstorableText, UNSTORABLE_TEXT_MESSAGE } from './storable-text.ts';

type Schema = ZodType<unknown>;

/**
 * Registers a function's documented route: its entry in the OpenAPI document, one synchronous
 * check of the request against the route's zod schemas, then the handler, which reads the result
 * with `c.req.valid('json' | 'query')` as before.
 *
 * zod-openapi's own `app.openapi` checks the same schemas, but through a media-type gate and an
 * async validator per target that re-reads headers and the body cache and awaits `safeParseAsync`:
 * about a tenth of the CPU of a cached ip-to-company lookup. The request guard (app.ts) has already
 * refused a non-JSON Content-Type and read the body, so what is left is to parse and check it.
 */
export function openapi<R extends RouteConfig>(app: FunctionApp, route: R, handler: RouteHandler<R, HonoEnv>): void {
  // What our functions declare is all this checks; anything else would go unchecked, so refuse it.
  const unsupported = (['params', 'headers', 'cookies'] as const).filter((k) => route.request?.[k]);
  if (unsupported.length || route.middleware || route.hide) {
    throw new Error(`${route.method} ${route.path}: openapi() does not handle ${[...unsupported, route.middleware ? 'middleware' : '', route.hide ? 'hide' : ''].filter(Boolean).join(', ')}`);
  }
  app.openAPIRegistry.registerPath(route);
  const media = route.request?.body?.content?.['application/json'];
  const schema: unknown = media && 'schema' in media ? media.schema : undefined;
  const body = typeof (schema as Partial<Schema> | undefined)?.safeParse === 'function' ? (schema as Schema) : undefined;
  if (route.request?.body && !body) throw new Error(`${route.method} ${route.path}: a request body must be an application/json zod schema`);
  const query = route.request?.query as Schema | undefined;
  app.on(route.method.toUpperCase(), route.path, validateInput(body, query), handler as unknown as Handler<HonoEnv>);
}

function validateInput(body: Schema | undefined, query: Schema | undefined): MiddlewareHandler<HonoEnv> {
  return (c, next) => {
    if (body) {
      let value: unknown;
      try {
        value = JSON.parse(c.get('bodyText'));
      } catch {
        throw new AppError(400, 'the request body is not valid JSON');
      }
      c.req.addValidatedData('json', checked(body, value));
    }
    if (query) {
      // One value per parameter as a string, a repeated one as the list of its values.
      const raw: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(c.req.queries())) raw[k] = v.length === 1 ? (v[0] as string) : v;
      c.req.addValidatedData('query', checked(query, raw));
    }
    return next();
  };
}

function checked(schema: Schema, value: unknown): object {
  // Before the schema, once for every field of every route, so no text field can forget it.
  const unstorable = findUnstorableText(value);
  if (unstorable) throw new AppError(400, `${unstorable}: ${UNSTORABLE_TEXT_MESSAGE}`);
  const result = schema.safeParse(value);
  if (!result.success) throw new AppError(400, describeValidationIssues(result.error.issues));
  return result.data as object;
}
