import { FUNCTIONS_PREFIX } from '@sightline/host';
import { type BenchServer, benchDuration, benchRouteAgainstBaseline, CONNECTIONS, startBaseline, startServerForBench } from './lib.ts';

/**
 * `npm run bench -- ip-to-company`: ip-to-company on cache hits as a customer calls it (the
 * production server in its own process with its local IP data: authentication, validation, the
 * credit charge, the recent-results cache) against a plain Hono app with one JSON route in a process
 * of its own, same load, same run; then the server's memory after that load. On Postgres the server
 * is `npm run serve`; without DATABASE_URL it is `npm start` on the embedded default.
 */
const ADDRESS = '17.253.144.10';

export async function run(): Promise<void> {
  const baseline = await startBaseline();
  let server: (BenchServer & { embedded: boolean }) | undefined;
  try {
    server = await startServerForBench({ pool: 2, ipData: true });
    const account = (await server.operator('create-account', { name: 'Bench lookups', domain: 'bench-lookups.example.com' })) as {
      account_id: string;
      key: string;
    };
    await server.operator('grant-credits', { 'account-id': account.account_id, credits: '1000' });
    const where = server.embedded ? 'embedded' : 'postgres';
    await benchRouteAgainstBaseline({
      bench: 'ip-to-company',
      server,
      baseline,
      // The probe is the miss that fills the cache; every measured call is a hit.
      target: {
        name: 'ip-to-company (cache hit)',
        url: `${server.url}${FUNCTIONS_PREFIX}/ip-to-company`,
        method: 'POST',
        headers: { 'x-access-key': account.key, 'content-type': 'application/json' },
        body: JSON.stringify({ ip: ADDRESS }),
      },
      seconds: benchDuration(),
      serverNote: ', IP_DATA=1',
      metrics: { throughput: `cache hits req/s vs plain Hono (${where})`, p99: `cache hit p99 at ${CONNECTIONS} connections (${where})` },
      goals: { ratio: 0.5, p99Ms: 10 },
    });
  } finally {
    await server?.close();
    await baseline.close();
  }
}
