import { FUNCTIONS_PREFIX } from '@sightline/host';
import {
  type BenchServer,
  benchDuration,
  benchRouteAgainstEquivalent,
  CONNECTIONS,
  startBaseline,
  startEquivalent,
  startServerForBench,
} from './lib.ts';

/**
 * `npm run bench -- pool-state`: partner-pool-state as a partner calls it (the production server in
 * its own process: authentication, validation, the pool query, JSON shaping) against its minimal
 * equivalent (bench/minimal-equivalent-pool.ts: a key found in a Map and one postgres.js query a
 * request, same database, same pool size), with the plain Hono route beside them; each in a process
 * of its own, same load, same run. Then each process's CPU and heap allocation per request and the
 * server's memory after that load. On Postgres the server is `npm run serve`; without DATABASE_URL it
 * is `npm start` on the embedded default, where no equivalent can share the database.
 *
 * postgres.js pool size for 32 client connections on 2 cores with Postgres on the same machine:
 * postgres.js pipelines queries on a busy connection, and every request here is two short index
 * lookups, so the limit is CPU shared by Node, the load generator and the Postgres backends, not
 * waiting on connections; each extra backend only adds context switches. A sweep of 1–16 (5 s runs)
 * peaked at 1 and fell steadily from 2 up. Not 1: `begin` reserves its connection, so a
 * one-connection pool stalls every read behind any write transaction, a setting nobody should
 * deploy. 2 is the default pool the goal is judged at; BENCH_POOL overrides it to repeat the sweep.
 */
const DEFAULT_POOL = 2;

export async function run(): Promise<void> {
  const pool = Number(process.env.BENCH_POOL ?? DEFAULT_POOL);
  if (!Number.isInteger(pool) || pool < 1) throw new Error(`BENCH_POOL must be a positive integer, got "${process.env.BENCH_POOL}"`);
  const baseline = await startBaseline({ probe: true });
  let server: (BenchServer & { embedded: boolean }) | undefined;
  let equivalent: Awaited<ReturnType<typeof startEquivalent>> | undefined;
  try {
    server = await startServerForBench({ pool, ipData: false, probe: true });
    const partner = (await server.operator('create-partner', { name: 'Bench Partner', quota: '1000', topup: '100' })) as {
      key: string;
      account_id: string;
    };
    const where = server.embedded ? 'embedded' : 'postgres';
    const target = { name: 'pool-state', url: `${server.url}${FUNCTIONS_PREFIX}/partner-pool-state`, headers: { 'x-access-key': partner.key } };
    const probe = await fetch(target.url, { headers: target.headers });
    const ourAnswer = await probe.text();
    if (probe.status !== 200) throw new Error(`pool-state answered ${probe.status}: ${ourAnswer}`);
    if (server.databaseUrl) {
      equivalent = await startEquivalent('minimal-equivalent-pool', {
        DATABASE_URL: server.databaseUrl,
        DATABASE_POOL_MAX: String(pool),
        EQUIV_KEYS: JSON.stringify({ [partner.key]: partner.account_id }),
      });
      // The same request must get the same answer, or the comparison is of different work.
      const theirs = await (await fetch(`${equivalent.url}/pool-state`, { headers: target.headers })).text();
      if (theirs !== ourAnswer) throw new Error(`the minimal equivalent answers differently:\n ours:   ${ourAnswer}\n theirs: ${theirs}`);
    }
    await benchRouteAgainstEquivalent({
      bench: 'pool-state',
      server,
      baseline,
      equivalent,
      target,
      equivalentUrl: `${equivalent?.url}/pool-state`,
      seconds: benchDuration(),
      metrics: {
        equivalent: `pool-state vs minimal equivalent, req/s (${where}, pool ${pool})`,
        bare: `req/s vs plain Hono (${where}, pool ${pool})`,
        cpu: 'server CPU per request',
        allocated: 'heap bytes allocated per request',
        p99: `p99 at ${CONNECTIONS} connections (${where})`,
      },
      goals: { ratio: 1.0, p99Ms: 15 },
    });
  } finally {
    await equivalent?.close();
    await server?.close();
    await baseline.close();
  }
}
