/**
 * The Supabase entry's dependencies (buildDenoDeps, from this process's environment) answering
 * api-create-connect-link as the function does behind the gateway, for a request whose Host is
 * forged: prints `{status, body}` as one JSON line and exits. A bad configuration fails the start,
 * as a deployed function would. Run by tests/public-base-url.test.ts. Deno-only: excluded from
 * tsconfig and vitest on purpose.
 *
 * Env: SIGHTLINE_SECRET; PUBLIC_BASE_URL; TEST_KEY (a key of an account); DATABASE_URL, or PGLITE_DIR
 * for a PGlite data dir the test seeded.
 */

import { apiCreateConnectLink } from '../../functions/api-create-connect-link/route.ts';
import { openPglite } from '../../packages/host/src/db-pglite.ts';
import { buildDenoDeps, createDenoApp } from '../../supabase/functions/_shared/host.ts';

const pgliteDir = Deno.env.get('PGLITE_DIR');
const deps = await buildDenoDeps(pgliteDir ? { db: await openPglite(pgliteDir) } : {});
try {
  const app = createDenoApp(deps, apiCreateConnectLink);
  const res = await app.request('http://evil.example/api-create-connect-link', {
    method: 'POST',
    headers: { 'x-access-key': Deno.env.get('TEST_KEY') ?? '', host: 'evil.example', 'x-forwarded-proto': 'http' },
  });
  console.log(JSON.stringify({ status: res.status, body: await res.json() }));
} finally {
  await deps.close();
}
