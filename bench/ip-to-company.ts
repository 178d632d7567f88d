import { FUNCTIONS_PREFIX } from '@sightline/host';
import {
  type BenchServer,
  benchDuration,
  CONNECTIONS,
  compareWithBaseline,
  figure,
  formatTable,
  machineLine,
  memoryGoal,
  printFigures,
  resultsTable,
  runRows,
  startBaseline,
  startServerForBench,
  type Target,
  verdict,
  WARMUP_SECONDS,
} from './lib.ts';

/**
 * `npm run bench -- ip-to-company`: ip-to-company on cache hits as a customer calls it (the
 * production server in its own process with its local IP data: authentication, validation, the
 * credit charge, the recent-results cache) against a plain Hono app with one JSON route in a process
 * of its own, same load, same run; then the server's memory after that load. On Postgres the server
 * is `npm run serve`; without DATABASE_URL it is `npm start` on the embedded default.
 */
const ADDRESS = '17.253.144.10';

export async function run(): Promise<void> {
  const seconds = benchDuration();
  const embedded = !process.env.DATABASE_URL;
  let server: BenchServer | undefined;
  const baseline = await startBaseline();
  try {
    server = await startServerForBench({ pool: 2, ipData: true });
    const account = (await server.operator('create-account', { name: 'Bench lookups', domain: 'bench-lookups.example.com' })) as {
      account_id: string;
      key: string;
    };
    await server.operator('grant-credits', { 'account-id': account.account_id, credits: '1000' });
    const lookup: Target = {
      name: 'ip-to-company (cache hit)',
      url: `${server.url}${FUNCTIONS_PREFIX}/ip-to-company`,
      method: 'POST',
      headers: { 'x-access-key': account.key, 'content-type': 'application/json' },
      body: JSON.stringify({ ip: ADDRESS }),
    };
    // The first call is the miss that fills the cache; every measured call is a hit.
    const first = await fetch(lookup.url, { method: 'POST', headers: lookup.headers, body: lookup.body });
    if (first.status !== 200) throw new Error(`ip-to-company probe returned ${first.status}: ${await first.text()}`);
    await first.body?.cancel();
    const bare: Target = { name: 'plain Hono route', url: `${baseline.url}${baseline.path}` };

    process.stdout.write(
      [
        'bench ip-to-company',
        `  ${machineLine()}`,
        `  server: ${server.where}, IP_DATA=1`,
        '  baseline: a plain Hono app with one JSON route (bench/baseline-server.ts), built the same way, plain node, its own process',
        `  load: autocannon, ${CONNECTIONS} connections (worker thread of the bench process); warm-up ${WARMUP_SECONDS} s each, then ${seconds} s per run, order baseline, lookup, lookup, baseline`,
        '',
      ].join('\n'),
    );
    const { runs, baseline: b, ours: l } = await compareWithBaseline(lookup, bare, seconds);
    const rss = (await server.rss()) ?? Number.NaN;
    const ratio = l.reqPerSec / b.reqPerSec;
    const memory = memoryGoal(embedded);
    process.stdout.write(
      [
        resultsTable([runRows(runs), [b, l]]),
        'combined: req/s over both runs; p50/p99 of the worse run. Latency resolution is 1 ms (autocannon).',
        '',
        formatTable(
          ['check', 'measured', 'goal', 'result'],
          [
            [
              ['ip-to-company / plain Hono req/s', `${(ratio * 100).toFixed(1)}%`, '≥ 50%', verdict(ratio >= 0.5)],
              ['ip-to-company p99', `${l.p99} ms`, '≤ 10 ms', verdict(l.p99 <= 10)],
              ['server RSS after the load', `${rss} MB`, `${memory.replace('ours <= ', '≤ ')} MB`, verdict(rss <= Number(memory.split(' ').at(-1)))],
            ],
          ],
        ),
        '',
      ].join('\n'),
    );
    const where = embedded ? 'embedded' : 'postgres';
    printFigures([
      figure('ip-to-company', `cache hits req/s vs plain Hono (${where})`, {
        ours: l.reqPerSec,
        baseline: b.reqPerSec,
        goal: embedded ? '' : 'ratio >= 0.5',
        unit: 'req/s',
      }),
      figure('ip-to-company', `cache hit p99 at ${CONNECTIONS} connections (${where})`, {
        ours: l.p99,
        goal: embedded ? '' : 'ours <= 10',
        unit: 'ms',
      }),
      figure('ip-to-company', `server RSS after load (${embedded ? 'npm start, embedded' : 'npm run serve, Postgres'})`, {
        ours: rss,
        goal: memory,
        unit: 'MB',
      }),
    ]);
  } finally {
    await server?.close();
    await baseline.close();
  }
}
