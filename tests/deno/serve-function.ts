/**
 * Serves partner-pool-state (and, for request bodies under Deno, partner-create-child-key,
 * ip-to-company from the edge data snapshot in IP_DATA_DIR, collect with the visitor's address
 * from Deno's connection info, the tracker script, the tracker sweep, list-visitors, visitors-export and identification-list) the way
 * the supabase/functions entrypoints do, but on a port the caller can find and with a database the
 * caller chose, so tests/deno-smoke.test.ts can compare it with the Node host and
 * tests/supabase-client.test.ts can call it through supabase-js (behind
 * tests/support/supabase-gateway.ts). Deno-only: excluded from tsconfig and vitest on purpose.
 *
 * Env: SIGHTLINE_SECRET; SWEEP_SECRET; DATABASE_URL, or PGLITE_DIR for a PGlite data dir the test seeded (the
 * embedded default has no URL to hand over); PORT (default 0, i.e. any free port).
 */

import { createApiServer } from '@sightline/core';
import { collect } from '../../functions/collect/route.ts';
import { identificationList } from '../../functions/identification-list/route.ts';
import { ipToCompany } from '../../functions/ip-to-company/route.ts';
import { listVisitorsFunction } from '../../functions/list-visitors/route.ts';
import { partnerCreateChildKey } from '../../functions/partner-create-child-key/route.ts';
import { partnerPoolState } from '../../functions/partner-pool-state/route.ts';
import { sweepTrackerEvents } from '../../functions/sweep-tracker-events/route.ts';
import { t } from '../../functions/t/route.ts';
import { visitorsExport } from '../../functions/visitors-export/route.ts';
import { openPglite } from '../../packages/host/src/db-pglite.ts';
import { buildDenoDeps } from '../../supabase/functions/_shared/host.ts';

const pgliteDir = Deno.env.get('PGLITE_DIR');
const port = Number(Deno.env.get('PORT') ?? '0');
if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be 0-65535, got ${port}`);

const deps = await buildDenoDeps({ ...(pgliteDir ? { db: await openPglite(pgliteDir) } : {}), ipData: true });
// Several functions on one server (each Supabase function serves one), so one Deno start covers them.
const app = createApiServer(
  deps,
  [partnerPoolState, partnerCreateChildKey, ipToCompany, collect, sweepTrackerEvents, listVisitorsFunction, identificationList, t, visitorsExport],
  { functionsPrefix: '' },
);

const server = Deno.serve(
  {
    hostname: '127.0.0.1',
    port,
    // The test reads this line to learn the port; Deno's default banner goes elsewhere and may change.
    onListen: ({ port }) => console.log(`listening ${port}`),
  },
  // As serveFunction does: Deno's connection info is the app's bindings (the visitor's address).
  (req, info) => app.fetch(req, { remoteAddr: info.remoteAddr }),
);

let stopping = false;
Deno.addSignalListener('SIGTERM', async () => {
  if (stopping) return;
  stopping = true;
  // PGlite writes its data dir on close, and a Postgres pool left open would hold the test's
  // database, which the test drops afterwards.
  await server.shutdown();
  await deps.db.close();
  Deno.exit(0);
});
