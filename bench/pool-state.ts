import { createPartner } from '@sightline/core';
import { FUNCTIONS_PREFIX } from '@sightline/host';
import { createTestEnv } from '../tests/support/app.ts';
import {
  benchDuration,
  CONNECTIONS,
  combine,
  drive,
  failures,
  formatTable,
  type Measured,
  machineLine,
  resultsTable,
  runRows,
  serveForBench,
  type Target,
  verdict,
  WARMUP_SECONDS,
} from './lib.ts';

/**
 * postgres.js pool size for 32 client connections on 2 cores with Postgres on the same machine.
 * postgres.js pipelines queries on a busy connection, and every request here is two short
 * index lookups, so the limit is CPU shared by Node, autocannon and the Postgres backends, not
 * waiting on connections: each extra backend only adds context switches. Sweeping 1–16 (5 s runs,
 * quiet machine) gave pool-state ≈ 4200 req/s at 1, ≈ 3400 at 2, ≈ 2600–3000 at 4, ≈ 2600 at 8,
 * ≈ 2300 at 12 and ≈ 2100 at 16, p99 rising from 18 ms to 28–32 ms (with the earlier in-process
 * server and no auth cache; the shape, not the figures, is what carries over). Not 1: `begin` reserves its
 * connection, so a one-connection pool stalls every read behind any write transaction — a setting
 * nobody should deploy. BENCH_POOL overrides it to repeat the sweep.
 */
const DEFAULT_POOL = 2;

/** Targets for real Postgres; PGlite runs print them too but cannot be held to them (one WASM connection). */
const MIN_RATIO = 0.25;
const MAX_P99_MS = 20;

function poolSize(): number {
  const raw = process.env.BENCH_POOL;
  if (raw === undefined || raw === '') return DEFAULT_POOL;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_POOL must be a positive integer, got "${raw}"`);
  return n;
}

export async function run(): Promise<void> {
  const seconds = benchDuration();
  const pool = poolSize();
  const env = await createTestEnv({ pool });
  try {
    const partner = await createPartner({ ctx: env.deps, input: { name: 'Bench Partner', quota: 1000, topup: 100 } });
    const [version] = await env.db<{ v: string }>`select current_setting('server_version') as v`;
    const dbLine =
      env.db.kind === 'postgres'
        ? `Postgres ${version?.v.split(' ')[0] ?? '?'} (throwaway database, postgres.js pool ${pool})`
        : `PGlite ${version?.v ?? '?'} (in-memory, one connection)`;

    // Same app, same server, same global middleware: the baseline (/bench/bare) isolates what
    // pool-state adds (authentication, the pool query, JSON shaping) from Hono and the Node adapter.
    const server = await serveForBench(env, { pool, ipData: false });
    try {
      const bare: Target = { name: 'bare', url: `${server.url}/bench/bare` };
      const poolState: Target = {
        name: 'pool-state',
        url: `${server.url}${FUNCTIONS_PREFIX}/partner-pool-state`,
        headers: { 'x-access-key': partner.key },
      };

      // A broken seed or route would otherwise surface as a wall of non-2xx after a full run.
      const probe = await fetch(poolState.url, { headers: poolState.headers });
      if (probe.status !== 200) throw new Error(`pool-state probe returned ${probe.status}: ${await probe.text()}`);
      await probe.body?.cancel();

      process.stdout.write(
        [
          'bench pool-state',
          `  ${machineLine()}`,
          `  database: ${dbLine}`,
          `  server: ${server.where}`,
          `  load: autocannon, ${CONNECTIONS} connections (worker thread); warm-up ${WARMUP_SECONDS} s per target, then ${seconds} s per run measured, order bare, pool-state, pool-state, bare`,
          '',
        ].join('\n'),
      );

      // Warm-up runs both targets so no measured run pays for JIT compilation or for postgres.js
      // opening its connections lazily. The measured runs go bare, pool-state, pool-state, bare:
      // load from anything else on the machine drifts over a run this long, and the mirrored order
      // gives both targets the same average position in time, so a linear drift cancels out of
      // the ratio instead of landing on whichever target happened to run second.
      for (const t of [bare, poolState]) await drive(t, WARMUP_SECONDS);
      const runs: Measured[] = [];
      for (const t of [bare, poolState, poolState, bare]) runs.push({ name: t.name, result: await drive(t, seconds) });

      const b = combine('bare', runs);
      const p = combine('pool-state', runs);
      process.stdout.write(`\n${resultsTable([runRows(runs), [b, p]])}\n`);
      process.stdout.write('combined: req/s over both runs; p50/p99 of the worse run. Latency resolution is 1 ms (autocannon).\n\n');

      const ratio = p.reqPerSec / b.reqPerSec;
      const p99 = p.p99;
      const checks = formatTable(
        ['check', 'measured', 'target', 'result'],
        [
          [
            ['pool-state / bare req/s', `${(ratio * 100).toFixed(1)}%`, `≥ ${MIN_RATIO * 100}%`, verdict(ratio >= MIN_RATIO)],
            ['pool-state p99', `${p99} ms`, `≤ ${MAX_P99_MS} ms`, verdict(p99 <= MAX_P99_MS)],
          ],
        ],
      );
      const scope =
        env.db.kind === 'postgres'
          ? 'The targets apply to this run (real Postgres).'
          : 'The targets apply to real Postgres only; this run used PGlite, so PASS/FAIL here is informational.';
      process.stdout.write(`${checks}\n${scope}\n`);

      // Missing a target is a finding, not an error; a request that did not succeed makes every figure suspect.
      const broken = runs.flatMap(({ name, result }) => {
        const why = failures(result);
        return why ? [`${name}: ${why}`] : [];
      });
      if (broken.length) throw new Error(`unsuccessful responses during the measured runs: ${broken.join(' | ')}`);
    } finally {
      await server.close();
    }
  } finally {
    await env.close();
  }
}
