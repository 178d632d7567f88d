import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createCoreDeps, createKeyring, type Database, silentLogger } from '@sightline/core';
import { createHostApp, openApiDocument } from './server.ts';

/** `npm run openapi`: regenerates docs/openapi.json from the route schemas. */
export const OPENAPI_FILE = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));

export async function generateOpenApi(): Promise<string> {
  // The document depends only on the routes; no dependency is touched while generating it.
  const unused = new Proxy(
    {},
    {
      get: () => {
        throw new Error('not available while generating OpenAPI');
      },
    },
  );
  const app = createHostApp(
    createCoreDeps({
      db: unused as Database,
      keyring: await createKeyring('openapi-generation-only-secret-000000'),
      webhooks: unused as never,
      log: silentLogger,
    }),
  );
  return `${JSON.stringify(openApiDocument(app), null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeFile(OPENAPI_FILE, await generateOpenApi());
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}
