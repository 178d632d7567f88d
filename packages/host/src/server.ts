import { allowedMethods, type CoreDeps, createApiServer, type FunctionApp, securitySchemes } from '@sightline/core';
import { allFunctions } from '../../../functions/index.ts';
import { serveConsole } from '../../console/src/serve.ts';
import { readNodeBody } from './node-body.ts';

export const FUNCTIONS_PREFIX = '/functions/v1';

/** The OpenAPI document, generated from the route schemas. */
export function openApiDocument(app: FunctionApp) {
  // Each route names its policy's scheme; the schemes themselves are stated once.
  for (const [name, scheme] of Object.entries(securitySchemes)) app.openAPIRegistry.registerComponent('securitySchemes', name, scheme);
  const doc = app.getOpenAPI31Document({
    openapi: '3.1.0',
    info: {
      title: 'Sightline API',
      version: '0.1.0',
      description:
        'Visitor identification and partner management. Errors are always `{ success: false, error, code }`: `code` is a stable reason to branch on, listed per status.',
    },
    servers: [{ url: 'http://localhost:8787', description: 'npm start' }],
  });
  return doc;
}

/** Every function mounted the way the spec addresses it, plus /healthz and /openapi.json. */
export function createHostApp(deps: CoreDeps, opts: { bodyTimeoutMs?: number } = {}): FunctionApp {
  // The Node host reads bodies from the raw IncomingMessage (node-body.ts), not the web stream.
  const app = createApiServer(deps, allFunctions, { functionsPrefix: FUNCTIONS_PREFIX, readBody: readNodeBody, ...opts });
  // Built on first request, not at start: walking every route's schemas is a tenth of a cold start.
  let doc: ReturnType<typeof openApiDocument> | undefined;
  app.get('/openapi.json', (c) => {
    doc ??= openApiDocument(app);
    return c.json(doc);
  });
  // The console (packages/console): its page and files under /console/, calling the functions here.
  app.get('/console', (c) => c.redirect('/console/', 308));
  app.get('/console/*', async (c) => {
    const file = c.req.path.slice('/console/'.length);
    const res = await serveConsole(file, { apiBase: FUNCTIONS_PREFIX, acceptEncoding: c.req.header('accept-encoding') });
    return res ?? c.json({ success: false, error: 'no such console file', code: 'not_found' }, 404);
  });
  app.get('/healthz', async (c) => {
    await deps.db`select 1`;
    return c.json({ success: true, status: 'ok' });
  });
  return app;
}

/** The methods a path of this host answers to (the Allow header of a 405), if it is a function's. */
export function allowedMethodsAt(pathname: string): string | undefined {
  const def = allFunctions.find((f) => {
    const base = `${f.mount === 'functions' ? FUNCTIONS_PREFIX : ''}/${f.name}`;
    // A root function owns the segment below its name too (`/t/<file>`).
    return pathname === base || (f.mount === 'root' && pathname.startsWith(`${base}/`));
  });
  if (!def) return undefined;
  return allowedMethods(def.method, def.policy.cors).join(', ');
}
