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
 * `npm run bench -- ip-to-company`: ip-to-company on cache hits as a customer calls it (the
 * production server in its own process with its local IP data: authentication, validation, the
 * credit charge, the recent-results cache) against its minimal equivalent (bench/
 * minimal-equivalent-lookup.ts: a key found in a Map, the body parsed and checked with zod, the
 * answer from a Map, sending the same body), with the plain Hono route beside them; each in a
 * process of its own, same load, same run. Then each process's CPU and heap allocation per request
 * and the server's memory after that load. On Postgres the server is `npm run serve`; without
 * DATABASE_URL it is `npm start` on the embedded default.
 */
const ADDRESS = '17.253.144.10';

export async function run(): Promise<void> {
  const baseline = await startBaseline({ probe: true });
  let server: (BenchServer & { embedded: boolean }) | undefined;
  let equivalent: Awaited<ReturnType<typeof startEquivalent>> | undefined;
  try {
    server = await startServerForBench({ pool: 2, ipData: true, probe: true });
    const account = (await server.operator('create-account', { name: 'Bench lookups', domain: 'bench-lookups.example.com' })) as {
      account_id: string;
      key: string;
    };
    await server.operator('grant-credits', { 'account-id': account.account_id, credits: '1000' });
    const where = server.embedded ? 'embedded' : 'postgres';
    const target = {
      name: 'ip-to-company (cache hit)',
      url: `${server.url}${FUNCTIONS_PREFIX}/ip-to-company`,
      method: 'POST' as const,
      headers: { 'x-access-key': account.key, 'content-type': 'application/json' },
      body: JSON.stringify({ ip: ADDRESS }),
    };
    // The first call is the miss that fills the cache; the second is a hit, whose answer the
    // equivalent sends back for every measured call, so both sides send the same body.
    for (let i = 0; i < 2; i++) {
      const res = await fetch(target.url, { method: 'POST', headers: target.headers, body: target.body });
      const answer = await res.text();
      if (res.status !== 200) throw new Error(`ip-to-company answered ${res.status}: ${answer}`);
      if (i === 1) {
        if ((JSON.parse(answer) as { cached?: boolean }).cached !== true) throw new Error(`the second lookup was not a cache hit: ${answer}`);
        equivalent = await startEquivalent('minimal-equivalent-lookup', {
          EQUIV_KEYS: JSON.stringify({ [account.key]: account.account_id }),
          EQUIV_RESULTS: JSON.stringify({ [ADDRESS]: JSON.parse(answer) }),
        });
      }
    }
    await benchRouteAgainstEquivalent({
      bench: 'ip-to-company',
      server,
      baseline,
      equivalent,
      target,
      equivalentUrl: `${equivalent?.url}/ip-to-company`,
      seconds: benchDuration(),
      serverNote: ', IP_DATA=1',
      metrics: {
        equivalent: `cache hits vs minimal equivalent, req/s (${where})`,
        bare: `cache hits req/s vs plain Hono (${where})`,
        cpu: 'server CPU per cache hit',
        allocated: 'heap bytes allocated per cache hit',
        p99: `cache hit p99 at ${CONNECTIONS} connections (${where})`,
      },
      goals: { ratio: 0.7, p99Ms: 10 },
    });
  } finally {
    await equivalent?.close();
    await server?.close();
    await baseline.close();
  }
}
