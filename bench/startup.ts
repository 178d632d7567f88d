import { spawn } from 'node:child_process';
import { createPartner, grantCredits } from '@sightline/core';
import { FUNCTIONS_PREFIX } from '@sightline/host';
import { buildHost } from '../packages/host/src/build.ts';
import { createTestEnv, TEST_SECRET } from '../tests/support/app.ts';
import { BUILT_MAIN, childEnv, REPO_ROOT } from '../tests/support/process.ts';
import { seedDirectAccount } from '../tests/support/seed.ts';
import { buildBaseline, figure, formatTable, machineLine, printFigures, setting, verdict } from './lib.ts';

/**
 * `npm run bench -- startup` (Postgres: DATABASE_URL): the cold start of `npm run serve`, timed from
 * the moment the process is spawned to its first answer, as a load balancer's first health probe or
 * a partner's first call would see it, on an already migrated database (a restart, a new replica).
 * Two answers are timed: partner-pool-state (authentication and the database), and ip-to-company
 * (the local IP data loaded). The baseline is the plain Hono process (bench/baseline-server.ts)
 * started the same way. The client polls every 5 ms from a separate process's point of view: this
 * process only spawns and polls.
 */
const RUNS = setting('BENCH_STARTUP_RUNS', 5);

/** Milliseconds from spawn until `probe` first answers `status`. */
async function firstAnswer(entry: string, env: NodeJS.ProcessEnv, probes: { path: string; init?: RequestInit; status: number }[]) {
  const t0 = performance.now();
  const proc = spawn(process.execPath, [entry], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  try {
    // The port is the process's own choice (PORT=0); it announces it on its first line.
    let port = 0;
    while (!port) {
      if (proc.exitCode !== null) throw new Error(`${entry} exited with ${proc.exitCode}\n${out}\n${err}`);
      if (performance.now() - t0 > 60_000) throw new Error(`${entry} did not announce a port in 60 s\n${out}\n${err}`);
      port = Number(/listening on http:\/\/localhost:(\d+)/.exec(out)?.[1] ?? 0);
      if (!port) await new Promise((r) => setTimeout(r, 2));
    }
    const listening = performance.now() - t0;
    const times: number[] = [];
    for (const p of probes) {
      for (;;) {
        const res = await fetch(`http://127.0.0.1:${port}${p.path}`, p.init).catch(() => undefined);
        if (res) await res.arrayBuffer();
        if (res?.status === p.status) break;
        if (performance.now() - t0 > 60_000) throw new Error(`${p.path} did not answer ${p.status} in 60 s (last ${res?.status})\n${err}`);
        await new Promise((r) => setTimeout(r, 5));
      }
      times.push(performance.now() - t0);
    }
    return { listening, times };
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => (proc.exitCode === null ? proc.once('exit', r) : r(null)));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

export async function run(): Promise<void> {
  const env = await createTestEnv({ pool: 2 });
  try {
    if (!env.url) throw new Error('the startup bench times `npm run serve` on Postgres: set DATABASE_URL');
    await buildHost();
    const baselineEntry = await buildBaseline();
    const partner = await createPartner({ ctx: env.deps, input: { name: 'Startup', quota: 1000 } });
    const account = await seedDirectAccount(env.deps, 'Startup lookups');
    await grantCredits({ ctx: env.deps, input: { accountId: account.account_id, credits: 1000 } });
    const serverEnv = childEnv({
      DATABASE_URL: env.url,
      SIGHTLINE_SECRET: TEST_SECRET,
      IP_DATA: '1',
      DEMO_PARTNER: '0',
      PORT: '0',
      HOST: '127.0.0.1',
    });
    const probes: { path: string; init?: RequestInit; status: number }[] = [
      { path: `${FUNCTIONS_PREFIX}/partner-pool-state`, init: { headers: { 'x-access-key': partner.key } }, status: 200 },
      {
        path: `${FUNCTIONS_PREFIX}/ip-to-company`,
        init: { method: 'POST', headers: { 'x-access-key': account.key, 'content-type': 'application/json' }, body: '{"ip":"17.253.144.10"}' },
        status: 200,
      },
    ];
    const ours: { listening: number; times: number[] }[] = [];
    const base: number[] = [];
    // Alternated, so the page cache and the machine's load treat both alike.
    for (let i = 0; i < RUNS; i++) {
      base.push((await firstAnswer(baselineEntry, childEnv({ PORT: '0' }), [{ path: '/bare', status: 200 }])).times[0] ?? Number.NaN);
      ours.push(await firstAnswer(BUILT_MAIN, serverEnv, probes));
    }
    const first = median(ours.map((o) => o.times[0] ?? Number.NaN));
    const lookup = median(ours.map((o) => o.times[1] ?? Number.NaN));
    const listening = median(ours.map((o) => o.listening));
    const baseline = median(base);
    process.stdout.write(
      [
        'bench startup',
        `  ${machineLine()}`,
        `  npm run serve (the build under plain node) on a migrated Postgres database, IP_DATA=1; ${RUNS} starts each, alternated; medians`,
        '',
        formatTable(
          ['from spawn to', 'median ms', 'runs (ms)', 'goal', 'result'],
          [
            [
              ['  listening (announced port)', listening.toFixed(0), ours.map((o) => o.listening.toFixed(0)).join(' '), '', ''],
              [
                '  first answer: partner-pool-state 200',
                first.toFixed(0),
                ours.map((o) => (o.times[0] ?? 0).toFixed(0)).join(' '),
                '≤ 1000',
                verdict(first <= 1000),
              ],
              ['  first ip-to-company 200 (IP data loaded)', lookup.toFixed(0), ours.map((o) => (o.times[1] ?? 0).toFixed(0)).join(' '), '', ''],
              ['  baseline: plain Hono process, first 200', baseline.toFixed(0), base.map((b) => b.toFixed(0)).join(' '), '', ''],
            ],
          ],
        ),
        '',
      ].join('\n'),
    );
    printFigures([
      figure('startup', 'npm run serve: spawn to first answer vs plain Hono process', { ours: first, baseline, goal: 'ours <= 1000', unit: 'ms' }),
      figure('startup', 'npm run serve: spawn to first ip-to-company answer (IP data loaded)', { ours: lookup, baseline, unit: 'ms' }),
    ]);
  } finally {
    await env.close();
  }
}
