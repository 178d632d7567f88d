import { BODY_TIMEOUT_MS, createApiServer, MAX_BODY_BYTES, type CoreDeps, type FunctionApp } from '@sightline/core';
import { allFunctions } from '../../../functions/index.ts';

export const FUNCTIONS_PREFIX = '/functions/v1';

/** The OpenAPI document, generated from the route schemas. */
export function openApiDocument(app: FunctionApp) {
  // The key travels in x-access-key on every route; it is documented once, as the security scheme,
  // rather than as a header parameter per route, which the validator would parse on every request.
  app.openAPIRegistry.registerComponent('securitySchemes', 'AccessKey', {
    type: 'apiKey',
    in: 'header',
    name: 'x-access-key',
    description: 'The partner master key on partner-* routes; any account key on ip-to-company and ip-to-best-fit.',
  });
  const doc = app.getOpenAPI31Document({
    openapi: '3.1.0',
    info: {
      title: 'Sightline API',
      version: '0.1.0',
      description: 'Visitor identification and partner management. Errors are always `{ success: false, error }`.',
    },
    servers: [{ url: 'http://localhost:8787', description: 'npm start' }],
    security: [{ AccessKey: [] }],
  });
  // Every POST passes the same body guard (http/app.ts), so its 408 and 413 are stated once, here.
  const bodyGuard = {
    '408': `Request body still incomplete ${BODY_TIMEOUT_MS / 1000} s after the headers (the connection is closed)`,
    '413': `Request body over ${MAX_BODY_BYTES} bytes`,
  };
  for (const item of Object.values(doc.paths ?? {})) {
    const post = item?.post;
    for (const [status, description] of Object.entries(bodyGuard)) {
      if (post?.responses && !post.responses[status]) {
        post.responses[status] = { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
      }
    }
  }
  return doc;
}

/** Every function mounted the way the spec addresses it, plus /healthz and /openapi.json. */
export function createHostApp(deps: CoreDeps, opts: { bodyTimeoutMs?: number } = {}): FunctionApp {
  const app = createApiServer(deps, allFunctions, { functionsPrefix: FUNCTIONS_PREFIX, ...opts });
  const doc = openApiDocument(app);
  app.get('/openapi.json', (c) => c.json(doc));
  app.get('/healthz', async (c) => {
    await deps.db`select 1`;
    return c.json({ success: true, status: 'ok' });
  });
  return app;
}

/** The methods a path of this host answers to (the Allow header of a 405), if it is a function's. */
export function allowedMethodsAt(pathname: string): string | undefined {
  const def = allFunctions.find((f) => pathname === `${f.mount === 'functions' ? FUNCTIONS_PREFIX : ''}/${f.name}`);
  if (!def) return undefined;
  return def.method === 'GET' ? 'GET, HEAD' : def.method;
}
