import { createApiServer, type CoreDeps, type FunctionApp } from '@sightline/core';
import { allFunctions } from '../../../functions/index.ts';

export const FUNCTIONS_PREFIX = '/functions/v1';

/** The OpenAPI document, generated from the route schemas. */
export function openApiDocument(app: FunctionApp) {
  app.openAPIRegistry.registerComponent('securitySchemes', 'AccessKey', {
    type: 'apiKey',
    in: 'header',
    name: 'x-access-key',
  });
  return app.getOpenAPI31Document({
    openapi: '3.1.0',
    info: {
      title: 'Sightline API',
      version: '0.1.0',
      description: 'Visitor identification and partner management. Errors are always `{ success: false, error }`.',
    },
    servers: [{ url: 'http://localhost:8787', description: 'npm start' }],
    security: [{ AccessKey: [] }],
  });
}

/** Every function mounted the way the spec addresses it, plus /healthz and /openapi.json. */
export function createHostApp(deps: CoreDeps): FunctionApp {
  const app = createApiServer(deps, allFunctions, { functionsPrefix: FUNCTIONS_PREFIX });
  const doc = openApiDocument(app);
  app.get('/openapi.json', (c) => c.json(doc));
  app.get('/healthz', async (c) => {
    await deps.db`select 1`;
    return c.json({ success: true, status: 'ok' });
  });
  return app;
}
