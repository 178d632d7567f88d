import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * Every response the in-process app gives a test is held to docs/openapi.json (issue 15): its status
 * must be documented for the route and method, and a JSON body must match the documented schema.
 * Paths the document does not describe (a deliberate 404, say) are left alone.
 */
interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
/** docs/openapi.json, as the suite reads it. */
export const openapiDocument = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown> };
};
const doc = openapiDocument;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addSchema(doc as object, 'openapi');

const routes = Object.entries(doc.paths).map(([path, ops]) => ({
  path,
  pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  ops,
}));
const compiled = new Map<string, ValidateFunction>();
/** Bodies validated so far in this file's process (a test shows the app's requests reach the check). */
let validated = 0;
export const bodiesValidated = () => validated;
const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/**
 * `gateway`: the answer came from a Supabase-style functions origin, where `/functions/v1` is the
 * gateway's and the function's own path starts after it (`/partner-pool-state`).
 */
export async function checkDocumentedResponse(url: string, method: string, res: Response, opts: { gateway?: boolean } = {}): Promise<void> {
  const path = new URL(url, 'http://localhost').pathname;
  const verb = method.toLowerCase();
  const route = routes.find((r) => r.pattern.test(path)) ?? (opts.gateway ? routes.find((r) => r.pattern.test(`/functions/v1${path}`)) : undefined);
  const op = route?.ops[verb];
  if (!route || !op) return;
  const status = String(res.status);
  // The response the document gives this status: its own, or the operation's default.
  const which = op.responses[status] ? status : 'default';
  const documented = op.responses[which];
  if (!documented) throw new Error(`${method} ${route.path} answered ${status}, which docs/openapi.json does not document for it`);
  const type = (res.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
  if (type !== 'application/json' || !documented.content?.['application/json']?.schema) return;
  const key = `${route.path} ${verb} ${which}`;
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile({ $ref: `openapi#/${pointer('paths', route.path, verb, 'responses', which, 'content', 'application/json', 'schema')}` });
    compiled.set(key, validate);
  }
  const body: unknown = await res.clone().json();
  if (!validate(body)) {
    throw new Error(
      `${method} ${route.path} ${status}: the body does not match docs/openapi.json: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
    );
  }
  validated++;
}
