import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type BuiltDeps, buildDeps, type Database, parseEnv, silentLogger } from '@sightline/core';
import { createHostApp, openApiDocument } from './server.ts';

/** `npm run openapi`: regenerates docs/openapi.json from the route schemas. */
export const OPENAPI_FILE = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));

/**
 * Dependencies for an app whose routes are only read (the OpenAPI document, a route's checks): the
 * production composition with no database and no transport, each throwing if touched.
 */
export async function routesOnlyDeps(): Promise<BuiltDeps> {
  const unused = new Proxy(
    {},
    {
      get: () => {
        throw new Error('not available to an app whose routes are only read');
      },
    },
  );
  return buildDeps(parseEnv({ IP_DATA: '0', AUTH_CACHE_TTL_SECONDS: '0' }), {
    db: unused as Database,
    secret: 'openapi-generation-only-secret-000000',
    log: silentLogger,
    webhooks: unused as never,
    listens: false,
  });
}

export async function generateOpenApi(): Promise<string> {
  // The document depends only on the routes; no dependency is touched while generating it.
  const app = createHostApp(await routesOnlyDeps());
  return `${JSON.stringify(openApiDocument(app), null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeFile(OPENAPI_FILE, await generateOpenApi());
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}
