import os from 'node:os';
import { parentPort, Worker, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';
import { buildHost } from '../packages/host/src/build.ts';
import { createTestEnv, TEST_SECRET, type TestEnv } from '../tests/support/app.ts';
import { BUILT_MAIN, childEnv, run, SERVE_NODE_OPTIONS, startHost } from '../tests/support/process.ts';

/** Shared by every bench so their figures are comparable. */
export const CONNECTIONS = 32;
export const WARMUP_SECONDS = 3;

/** Seconds per measured run: BENCH_DURATION, default 10. */
export function benchDuration(): number {
  const raw = process.env.BENCH_DURATION;
  if (raw === undefined || raw === '') return 10;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds < 1) throw new Error(`BENCH_DURATION must be a number of seconds ≥ 1, got "${raw}"`);
  return seconds;
}

export interface Listening {
  url: string;
  close(): Promise<void>;
}

export interface Target {
  name: string;
  url: string;
  headers?: Record<string, string>;
  method?: 'GET' | 'POST';
  body?: string;
}

/**
 * One autocannon run. The load generator runs on a worker thread: on the server's own event loop it
 * would steal the very CPU time being measured and add its own pauses to every latency.
 */
export async function drive(target: Target, seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url: target.url,
    headers: target.headers ?? {},
    method: target.method ?? 'GET',
    ...(target.body === undefined ? {} : { body: target.body }),
    connections: CONNECTIONS,
    duration: seconds,
    workers: 1,
    title: target.name,
  });
}

export interface Measured {
  name: string;
  result: autocannon.Result;
}

/** One line of the results table. */
export interface Row {
  label: string;
  reqPerSec: number;
  p50: number;
  p99: number;
  requests: number;
  unsuccessful: number;
}

/** Completed requests over the measured wall time, steadier than autocannon's per-second samples on short runs. */
const rate = (requests: number, seconds: number) => (seconds > 0 ? requests / seconds : 0);

/** Each run as its own row, numbered per target so the spread between repeats stays visible. */
export function runRows(runs: Measured[]): Row[] {
  const seen = new Map<string, number>();
  return runs.map(({ name, result: r }) => {
    const n = (seen.get(name) ?? 0) + 1;
    seen.set(name, n);
    return {
      label: `${name} #${n}`,
      reqPerSec: rate(r.requests.total, r.duration),
      p50: r.latency.p50,
      p99: r.latency.p99,
      requests: r.requests.total,
      unsuccessful: r.non2xx + r.errors,
    };
  });
}

/**
 * A target's runs as one row. autocannon returns percentiles, not mergeable histograms, so the
 * latencies are the worse run's: a verdict should not pass on the luckier half.
 */
export function combine(name: string, runs: Measured[]): Row {
  const mine = runs.filter((m) => m.name === name).map((m) => m.result);
  if (!mine.length) throw new Error(`no runs for ${name}`);
  const requests = mine.reduce((n, r) => n + r.requests.total, 0);
  return {
    label: `${name} (combined)`,
    reqPerSec: rate(
      requests,
      mine.reduce((s, r) => s + r.duration, 0),
    ),
    p50: Math.max(...mine.map((r) => r.latency.p50)),
    p99: Math.max(...mine.map((r) => r.latency.p99)),
    requests,
    unsuccessful: mine.reduce((n, r) => n + r.non2xx + r.errors, 0),
  };
}

/** Anything that is not a clean 2xx, as a sentence; undefined when the run was clean. */
export function failures(r: autocannon.Result): string | undefined {
  const problems: string[] = [];
  if (r.non2xx > 0) {
    const codes = Object.entries(r.statusCodeStats)
      .filter(([code]) => !code.startsWith('2'))
      .map(([code, s]) => `${code}×${s.count}`)
      .join(', ');
    problems.push(`${r.non2xx} non-2xx (${codes})`);
  }
  if (r.errors > 0) problems.push(`${r.errors} errors (${r.timeouts} timeouts)`);
  if (r.requests.total === 0) problems.push('no completed requests');
  return problems.length ? problems.join('; ') : undefined;
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
}

/** A fixed-width table in ruled sections: first column left-aligned, figures right-aligned. */
export function formatTable(header: string[], sections: string[][][]): string {
  const all = sections.flat();
  const widths = header.map((h, i) => Math.max(h.length, ...all.map((r) => (r[i] ?? '').length)));
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [pad(header, widths), ...sections.flatMap((rows) => [rule, ...rows.map((r) => pad(r, widths))])].join('\n');
}

export function resultsTable(sections: Row[][]): string {
  return formatTable(
    ['target', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'non-2xx'],
    sections.map((rows) =>
      rows.map((r) => [r.label, r.reqPerSec.toFixed(0), String(r.p50), String(r.p99), String(r.requests), String(r.unsuccessful)]),
    ),
  );
}

export function machineLine(): string {
  const cpus = os.cpus();
  const load = os.loadavg()[0] ?? 0;
  return `node ${process.version} · ${process.platform} ${process.arch} · ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? 'unknown'}) · load average ${load.toFixed(2)} at start`;
}

export const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

/** A whole-number setting from the environment (BENCH_*), or `fallback` when unset. */
export function setting(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a whole number ≥ ${min}, got "${raw}"`);
  return n;
}

export interface BenchServer extends Listening {
  /** Where and how the server runs, for the report's header. */
  where: string;
  /** The process whose memory is the server's (for `npm start`, the node process tsx launches). */
  rss(): Promise<number | undefined>;
  /** Runs an operator command the way its CLI would against this server's database. */
  operator(command: string, flags: Record<string, string>): Promise<Record<string, unknown>>;
  /** Its CPU and allocation per window, when it was started with the probe (server-probe.ts). */
  probe?: ServerProbe;
  /** The Postgres database it serves, when it is not the embedded default. */
  databaseUrl?: string;
  /** The server's process id, for readings of its own (CPU from /proc). */
  pid?: number;
}

/**
 * Where the HTTP benches send their load: `npm run serve` (the production build under plain node)
 * on the bench's Postgres database, in a process of its own, with its scheduler running as in
 * production. A bench's load generator and seeding never share the measured process.
 */
export async function serveForBench(
  env: TestEnv,
  opts: {
    pool: number;
    ipData: boolean;
    /** Extra server environment (e.g. TRUSTED_PROXIES). */
    env?: Record<string, string>;
    /** Load server-probe.ts, to read the server's CPU and allocation per request. */
    probe?: boolean;
  },
): Promise<BenchServer> {
  if (!env.url) throw new Error('this bench serves `npm run serve` on Postgres: set DATABASE_URL (see docs/operating.md, Benchmarks)');
  await buildHost();
  // childEnv: no Redis, so the hot cache is the in-process one `npm run serve` builds without it.
  const serverEnv = childEnv({
    DATABASE_URL: env.url,
    SIGHTLINE_SECRET: TEST_SECRET,
    DATABASE_POOL_MAX: String(opts.pool),
    IP_DATA: opts.ipData ? '1' : '0',
    DEMO_PARTNER: '0',
    PORT: '0',
    HOST: '127.0.0.1',
    ...opts.env,
  });
  const probe = opts.probe ? await probeSetup() : undefined;
  const server = await startHost({ ...serverEnv, ...probe?.env }, 60_000, {
    entry: BUILT_MAIN,
    nodeArgs: [...profileArgs(), ...(probe?.nodeArgs ?? [])],
  });
  const pid = server.proc.pid as number;
  const { runOperatorCommand } = await import('../packages/host/src/operator-commands.ts');
  return {
    url: `http://127.0.0.1:${server.port}`,
    where: `npm run serve (the build under plain node, pid ${pid}), Postgres, postgres.js pool ${opts.pool}`,
    rss: () => rssOf(pid),
    operator: async (command, flags) => (await runOperatorCommand(env.deps, command, flags)) as Record<string, unknown>,
    ...(probe ? { probe: probe.attach(pid) } : {}),
    databaseUrl: env.url,
    pid,
    close: async () => {
      await server.stop();
      await probe?.dispose();
    },
  };
}

/**
 * BENCH_CPU_PROFILE=<dir>: the measured server writes a V8 CPU profile there when it stops (open it
 * in Chrome DevTools or speedscope), to show where a request's time goes. Profiling slows the
 * server, so figures from such a run are not for the report.
 */
function profileArgs(): string[] {
  const dir = process.env.BENCH_CPU_PROFILE;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

/**
 * The server an HTTP bench measures: `npm run serve` on a throwaway Postgres database when
 * DATABASE_URL is set, else `npm start` on the embedded default. Closing it drops its database.
 */
export async function startServerForBench(opts: { pool: number; ipData: boolean; probe?: boolean }): Promise<BenchServer & { embedded: boolean }> {
  if (!process.env.DATABASE_URL) return { ...(await startEmbeddedForBench({ ipData: opts.ipData, probe: opts.probe })), embedded: true };
  const env = await createTestEnv({ pool: opts.pool });
  try {
    const server = await serveForBench(env, opts);
    return {
      ...server,
      embedded: false,
      close: async () => {
        await server.close();
        await env.close();
      },
    };
  } catch (err) {
    await env.close();
    throw err;
  }
}

/**
 * `npm start` on the embedded default (PGlite in a fresh data directory), in a process of its own.
 * Nothing else may open its database, so seeding goes through the operator endpoint the CLI uses
 * while the server holds the files (loopback, with the data directory's token).
 */
export async function startEmbeddedForBench(opts: { ipData: boolean; probe?: boolean }): Promise<BenchServer & { dataDir: string }> {
  const { mkdtemp, readFile, rm } = await import('node:fs/promises');
  const path = await import('node:path');
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'sightline-bench-'));
  // What `npm start` runs: the build, then the server under plain node.
  await buildHost();
  const probe = opts.probe ? await probeSetup() : undefined;
  const server = await startHost(
    childEnv({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', IP_DATA: opts.ipData ? '1' : '0', DEMO_PARTNER: '0', ...probe?.env }),
    120_000,
    { entry: BUILT_MAIN, nodeArgs: [...profileArgs(), ...(probe?.nodeArgs ?? [])] },
  );
  const pid = server.proc.pid as number;
  const url = `http://127.0.0.1:${server.port}`;
  return {
    url,
    dataDir,
    where: `npm start (the build under plain node, pid ${pid}), embedded PGlite in a fresh data directory`,
    rss: () => rssOf(pid),
    ...(probe ? { probe: probe.attach(pid) } : {}),
    operator: async (command, flags) => {
      const { token } = JSON.parse(await readFile(path.join(dataDir, 'server.json'), 'utf8')) as { token: string };
      const res = await fetch(`${url}/_operator/${command}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(flags),
      });
      const body = (await res.json()) as Record<string, unknown>;
      if (res.status !== 200) throw new Error(`operator ${command} answered ${res.status}: ${JSON.stringify(body)}`);
      return body;
    },
    close: async () => {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
      await probe?.dispose();
    },
  };
}

/**
 * The HTTP baseline (bench/baseline-server.ts): a plain Hono app with one JSON route, bundled like
 * the host and run under plain node in its own process. `path` is its one route.
 */
export async function startBaseline(
  opts: { probe?: boolean } = {},
): Promise<Listening & { path: string; rss(): Promise<number | undefined>; probe?: ServerProbe }> {
  const probe = opts.probe ? await probeSetup() : undefined;
  const server = await startHost(childEnv({ PORT: '0', HOST: '127.0.0.1', ...probe?.env }), 30_000, {
    entry: await buildBaseline(),
    nodeArgs: probe?.nodeArgs ?? [],
  });
  const pid = server.proc.pid as number;
  return {
    url: `http://127.0.0.1:${server.port}`,
    path: '/bare',
    rss: () => rssOf(pid),
    ...(probe ? { probe: probe.attach(pid) } : {}),
    close: async () => {
      await server.stop();
      await probe?.dispose();
    },
  };
}

/** One request of a counted load: requests are sent in turn, cycling through the list. */
export interface CountedRequest {
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface CountedLoad {
  name: string;
  /** `http://127.0.0.1:port`. */
  origin: string;
  method: 'GET' | 'POST';
  requests: CountedRequest[];
  /** Keep-alive connections, each with one request in flight at a time (a closed loop). */
  connections: number;
  seconds: number;
}

export interface CountedResult {
  name: string;
  /** From the first request sent to the last response received. */
  seconds: number;
  /** Responses received, every one of them: none is left in flight when the run ends. */
  completed: number;
  /** Responses by status code. */
  statuses: Record<string, number>;
  /** Requests that got no response (connection errors, timeouts); the first one's message. */
  errors: number;
  firstError?: string;
  /** Milliseconds, to 0.01 ms, over every response. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  /** Response bytes received, all responses. */
  bytes: number;
}

/**
 * A closed-loop load with exact counts, on a worker thread (like `drive`, so the load generator
 * does not share the bench's event loop). Unlike autocannon, which stops at the deadline with
 * requests still in flight and never learns how they ended, this stops *sending* at the deadline
 * and waits for every response, so the counts are exact: what a bench compares with rows in the
 * database must be every response the server gave, not most of them.
 */
export function driveCounted(load: CountedLoad): Promise<CountedResult> {
  // The worker runs this module's `countedLoadWorker` through tsx, registered in the worker
  // (Node 20 does not hand a parent's loader hooks to worker threads).
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); }).then((lib) => lib.countedLoadWorker())`;
  const worker = new Worker(code, { eval: true, workerData: load });
  return new Promise((resolve, reject) => {
    worker.once('message', (r: CountedResult) => resolve(r));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load worker exited with ${code}`));
    });
  });
}

/** The worker side of `driveCounted`; only ever called on its worker thread. */
export async function countedLoadWorker(): Promise<void> {
  const { Client } = await import('undici');
  const load = workerData as CountedLoad;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let firstError: string | undefined;
  let bytes = 0;
  let next = 0;
  const clients = Array.from({ length: load.connections }, () => new Client(load.origin, { keepAliveTimeout: 60_000, pipelining: 1 }));
  const start = performance.now();
  const deadline = start + load.seconds * 1000;
  let last = start;
  const lane = async (client: InstanceType<typeof Client>) => {
    while (performance.now() < deadline) {
      const r = load.requests[next++ % load.requests.length] as CountedRequest;
      const t0 = performance.now();
      try {
        const res = await client.request({ path: r.path, method: load.method, headers: r.headers ?? {}, body: r.body ?? null });
        bytes += (await res.body.arrayBuffer()).byteLength;
        last = performance.now();
        latencies.push(last - t0);
        const code = String(res.statusCode);
        statuses[code] = (statuses[code] ?? 0) + 1;
      } catch (err) {
        errors++;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  await Promise.all(clients.map(lane));
  await Promise.all(clients.map((c) => c.close()));
  const sorted = Float64Array.from(latencies).sort();
  const at = (q: number) => (sorted.length ? (sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0) : 0);
  const round = (ms: number) => Math.round(ms * 100) / 100;
  const result: CountedResult = {
    name: load.name,
    seconds: (last - start) / 1000,
    completed: latencies.length,
    statuses,
    errors,
    ...(firstError ? { firstError } : {}),
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    max: round(at(1)),
    mean: round(latencies.reduce((a, b) => a + b, 0) / (latencies.length || 1)),
    bytes,
  };
  parentPort?.postMessage(result);
}

/** Responses per second over the run. */
export const countedRate = (r: CountedResult) => (r.seconds > 0 ? r.completed / r.seconds : 0);

/** Anything but the expected status, as a sentence; undefined when every response had it. */
export function countedFailures(r: CountedResult, expected: number): string | undefined {
  const others = Object.entries(r.statuses).filter(([code]) => code !== String(expected));
  const problems: string[] = [];
  if (others.length) problems.push(`${others.reduce((n, [, c]) => n + c, 0)} not ${expected} (${others.map(([c, n]) => `${c}×${n}`).join(', ')})`);
  if (r.errors) problems.push(`${r.errors} without a response (first: ${r.firstError ?? '?'})`);
  if (!r.completed) problems.push('no completed requests');
  return problems.length ? problems.join('; ') : undefined;
}

/** Results of counted loads as table rows (req/s, latencies to 0.01 ms). */
export function countedTable(results: CountedResult[]): string {
  return formatTable(
    ['target', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'responses', 'statuses', 'errors'],
    [
      results.map((r) => [
        r.name,
        countedRate(r).toFixed(0),
        r.p50.toFixed(2),
        r.p90.toFixed(2),
        r.p99.toFixed(2),
        r.max.toFixed(2),
        String(r.completed),
        Object.entries(r.statuses)
          .map(([c, n]) => `${c}×${n}`)
          .join(' '),
        String(r.errors),
      ]),
    ],
  );
}

/**
 * One measured figure, printed as one JSON line at the end of a bench; `npm run bench` (no argument)
 * collects these lines from every bench into bench/REPORT.md.
 *
 * `goal` is a small, checkable sentence over the figure's own fields: clauses like `ratio >= 10` or
 * `ours <= 50`, joined by ` and ` (`ours`, `baseline` and `ratio`; operators >=, <=, ==). An empty goal
 * means the figure is reported, not judged. `baseline` and `ratio` are null where a figure has no
 * baseline (a wall time, a count).
 */
export interface Figure {
  bench: string;
  metric: string;
  ours: number;
  baseline: number | null;
  ratio: number | null;
  goal: string;
  unit: string;
}

const GOAL_CLAUSE = /^(ours|baseline|ratio)\s*(>=|<=|==)\s*(-?\d+(?:\.\d+)?(?:e\d+)?)$/;

/** Whether a figure meets its goal; undefined when it has none. A malformed goal is a bench bug. */
export function meetsGoal(f: Figure): boolean | undefined {
  if (!f.goal.trim()) return undefined;
  return f.goal.split(/\s+and\s+/).every((clause) => {
    const m = GOAL_CLAUSE.exec(clause.trim());
    if (!m) throw new Error(`bench ${f.bench}: unreadable goal clause "${clause}" in "${f.goal}"`);
    const value = f[m[1] as 'ours' | 'baseline' | 'ratio'];
    if (value === null || !Number.isFinite(value)) return false;
    const limit = Number(m[3]);
    return m[2] === '>=' ? value >= limit : m[2] === '<=' ? value <= limit : value === limit;
  });
}

/** A figure with its ratio worked out from ours and baseline (null without a baseline). */
export function figure(bench: string, metric: string, f: { ours: number; baseline?: number | null; goal?: string; unit: string }): Figure {
  const baseline = f.baseline ?? null;
  const ratio = baseline === null || baseline === 0 ? null : Math.round((f.ours / baseline) * 10_000) / 10_000;
  const out: Figure = { bench, metric, ours: f.ours, baseline, ratio, goal: f.goal ?? '', unit: f.unit };
  meetsGoal(out); // a typo in a goal fails the bench that wrote it, not the report
  return out;
}

/** Prints the figures last, one JSON line each, and sets a failing exit code for none of them: missing a goal is a finding. */
export function printFigures(figures: Figure[]): void {
  process.stdout.write(`\n${figures.map((f) => JSON.stringify(f)).join('\n')}\n`);
}

/** Resident set size of another process, in MB (MiB, one decimal): /proc on Linux, else ps; undefined where neither answers. */
export async function rssOf(pid: number): Promise<number | undefined> {
  const mib = (kb: number) => Math.round(kb / 102.4) / 10;
  try {
    const { readFile } = await import('node:fs/promises');
    const kb = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1];
    if (kb !== undefined) return mib(Number(kb));
  } catch {
    // not Linux: ask ps
  }
  const out = await run('ps', ['-o', 'rss=', '-p', String(pid)], process.env).catch(() => undefined);
  const kb = Number(out?.stdout.trim());
  return out?.code === 0 && Number.isFinite(kb) && kb > 0 ? mib(kb) : undefined;
}

const BENCH_BUILD_DIR = new URL('./.build/', import.meta.url).pathname;

/** A bench-side server (baseline, minimal equivalent, probe) bundled like the host; returns its entry. */
async function buildBenchEntry(name: string): Promise<string> {
  await buildHost({ [name]: `bench/${name}.ts` }, BENCH_BUILD_DIR);
  return `${BENCH_BUILD_DIR}${name}.mjs`;
}

/** The baseline server's bundle (bench/baseline-server.ts), built like the host; returns its entry. */
export const buildBaseline = () => buildBenchEntry('baseline-server');

/** One window of a probed process (bench/server-probe.ts). */
export interface ProbeReading {
  cpuMicros: number;
  allocatedBytes: number;
  collections: number;
}

/** A process started with bench/server-probe.ts: what it spends while `fn` runs. */
export interface ServerProbe {
  during<T>(fn: () => Promise<T>): Promise<{ value: T; reading: ProbeReading }>;
}

/**
 * What starting a process with the probe takes (its node arguments and environment), and how to
 * reach it once it runs. The probe answers a signal by writing its file, so the bench waits for the
 * file's sequence number to move on before it starts or ends a run.
 */
async function probeSetup(): Promise<{
  nodeArgs: string[];
  env: Record<string, string>;
  attach(pid: number): ServerProbe;
  dispose(): Promise<void>;
}> {
  const { mkdtemp, readFile, rm } = await import('node:fs/promises');
  const path = await import('node:path');
  const entry = await buildBenchEntry('server-probe');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sightline-probe-'));
  const file = path.join(dir, 'probe.json');
  let seq = 0;
  const toggle = async (pid: number): Promise<Record<string, unknown>> => {
    seq++;
    process.kill(pid, 'SIGUSR2');
    const deadline = performance.now() + 5_000;
    for (;;) {
      const text = await readFile(file, 'utf8').catch(() => '');
      const data = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      if (data?.seq === seq) return data;
      if (performance.now() > deadline) throw new Error(`the probe of process ${pid} did not answer signal ${seq}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  return {
    nodeArgs: ['--import', entry],
    env: { BENCH_PROBE_FILE: file },
    dispose: () => rm(dir, { recursive: true, force: true }),
    attach: (pid) => ({
      during: async (fn) => {
        await toggle(pid);
        const value = await fn();
        const closed = await toggle(pid);
        return {
          value,
          reading: { cpuMicros: Number(closed.cpuMicros), allocatedBytes: Number(closed.allocatedBytes), collections: Number(closed.collections) },
        };
      },
    }),
  };
}

/**
 * A minimal equivalent of one of our routes (bench/minimal-equivalent-*.ts): the least a user would
 * write with the same libraries to answer the same request, bundled like the host, run under plain
 * node with the serve script's node options (so the comparison is of code, not of collector
 * settings), in a process of its own, with the probe. `env` is what it answers from.
 */
export async function startEquivalent(
  name: 'minimal-equivalent-lookup' | 'minimal-equivalent-pool',
  env: Record<string, string>,
): Promise<Listening & { rss(): Promise<number | undefined>; probe: ServerProbe }> {
  const probe = await probeSetup();
  const server = await startHost(childEnv({ PORT: '0', HOST: '127.0.0.1', ...env, ...probe.env }), 30_000, {
    entry: await buildBenchEntry(name),
    nodeArgs: [...SERVE_NODE_OPTIONS, ...probe.nodeArgs],
  });
  const pid = server.proc.pid as number;
  return {
    url: `http://127.0.0.1:${server.port}`,
    rss: () => rssOf(pid),
    probe: probe.attach(pid),
    close: async () => {
      await server.stop();
      await probe.dispose();
    },
  };
}

/** One side of a comparison: where the load goes, and the probe of the process that answers it. */
export interface Side {
  target: Target;
  probe?: ServerProbe;
}

/** A side's cost per request over its measured runs: CPU µs and heap bytes. */
export interface PerRequest {
  name: string;
  requests: number;
  cpuMicros: number;
  allocatedBytes: number;
}

/**
 * Sides measured over HTTP, each its own process, the same load generator and connection count:
 * warm-up for each, then every side in turn and back again (a, b, c, c, b, a: load from anything
 * else on the machine drifts over a run this long; the mirrored order gives every side the same
 * average position in time, so a linear drift cancels out of the ratios). Each probed side's CPU
 * and allocation are read over exactly its own runs. Throws on any unsuccessful response: a run with
 * errors makes every figure suspect.
 */
export async function compareSides(sides: Side[], seconds: number): Promise<{ runs: Measured[]; rows: Row[]; perRequest: PerRequest[] }> {
  for (const { target } of sides) await drive(target, WARMUP_SECONDS);
  const runs: Measured[] = [];
  const spent = new Map<string, { cpuMicros: number; allocatedBytes: number; requests: number }>();
  for (const side of [...sides, ...[...sides].reverse()]) {
    const { target, probe } = side;
    if (!probe) {
      runs.push({ name: target.name, result: await drive(target, seconds) });
      continue;
    }
    const { value: result, reading } = await probe.during(() => drive(target, seconds));
    runs.push({ name: target.name, result });
    const s = spent.get(target.name) ?? { cpuMicros: 0, allocatedBytes: 0, requests: 0 };
    spent.set(target.name, {
      cpuMicros: s.cpuMicros + reading.cpuMicros,
      allocatedBytes: s.allocatedBytes + reading.allocatedBytes,
      requests: s.requests + result.requests.total,
    });
  }
  const broken = runs.flatMap(({ name, result }) => {
    const why = failures(result);
    return why ? [`${name}: ${why}`] : [];
  });
  if (broken.length) throw new Error(`unsuccessful responses during the measured runs: ${broken.join(' | ')}`);
  const perRequest = [...spent].map(([name, s]) => ({
    name,
    requests: s.requests,
    cpuMicros: s.cpuMicros / s.requests,
    allocatedBytes: s.allocatedBytes / s.requests,
  }));
  return { runs, rows: sides.map(({ target }) => combine(target.name, runs)), perRequest };
}

/**
 * One route of ours against its minimal equivalent and the plain Hono route, as pool-state and
 * ip-to-company measure it: a probe request (a broken seed or route fails here, not as a wall of
 * non-2xx after a full run; it is also the request that fills any cache the measured ones hit), the
 * interleaved runs, each process's CPU and allocation per request, the server's memory after them,
 * the checks, and the figures. The goal is the ratio to the equivalent; the plain route is
 * reported beside it. Goals apply on Postgres; the embedded default's figures are reported, its
 * memory judged. Without an equivalent (pool-state on the embedded default, where no second process
 * may open the database) only the plain route is compared.
 */
export async function benchRouteAgainstEquivalent(opts: {
  bench: string;
  server: BenchServer & { embedded: boolean };
  baseline: Listening & { path: string; probe?: ServerProbe };
  equivalent?: Listening & { probe: ServerProbe };
  /** Our route, and the equivalent's URL for the same request. */
  target: Target;
  equivalentUrl?: string;
  seconds: number;
  /** After the server's own description in the header (e.g. `, IP_DATA=1`). */
  serverNote?: string;
  /** Metric names, each ending with where it ran; to `cpu` and `allocated` the bench adds what they compare and where. */
  metrics: { equivalent: string; bare: string; cpu: string; allocated: string; p99: string };
  goals: { ratio: number; p99Ms: number };
}): Promise<void> {
  const { bench, server, target, goals } = opts;
  const bare: Side = { target: { name: 'plain Hono route', url: `${opts.baseline.url}${opts.baseline.path}` }, probe: opts.baseline.probe };
  const equivalent: Side | undefined =
    opts.equivalent && opts.equivalentUrl
      ? { target: { ...target, name: 'minimal equivalent', url: opts.equivalentUrl }, probe: opts.equivalent.probe }
      : undefined;
  const ours: Side = { target, probe: server.probe };
  const sides = [bare, ...(equivalent ? [equivalent] : []), ours];
  process.stdout.write(
    [
      `bench ${bench}`,
      `  ${machineLine()}`,
      `  server: ${server.where}${opts.serverNote ?? ''}`,
      '  plain route: a Hono app with one JSON GET route (bench/baseline-server.ts), built the same way, plain node, its own process',
      equivalent
        ? `  minimal equivalent: bench/minimal-equivalent-*.ts, built the same way, plain node with the serve script's options, its own process`
        : '  minimal equivalent: none here (no second process may open the embedded database)',
      `  load: autocannon, ${CONNECTIONS} connections (worker thread of the bench process); warm-up ${WARMUP_SECONDS} s each, then ${opts.seconds} s per run, order ${[...sides, ...[...sides].reverse()].map((s) => s.target.name).join(', ')}`,
      '',
    ].join('\n'),
  );
  const { runs, rows, perRequest } = await compareSides(sides, opts.seconds);
  const rowOf = (side: Side) => rows.find((r) => r.label === `${side.target.name} (combined)`) as Row;
  const costOf = (side: Side | undefined) => (side ? perRequest.find((p) => p.name === side.target.name) : undefined);
  const oursRow = rowOf(ours);
  const bareRow = rowOf(bare);
  const equivRow = equivalent ? rowOf(equivalent) : undefined;
  const rss = (await server.rss()) ?? Number.NaN;
  const where = server.embedded ? 'embedded' : 'postgres';
  const judged = (goal: string) => (server.embedded ? '' : goal);
  const figures: Figure[] = [];
  const againstEquivalent = equivRow
    ? figure(bench, opts.metrics.equivalent, {
        ours: oursRow.reqPerSec,
        baseline: equivRow.reqPerSec,
        goal: judged(`ratio >= ${goals.ratio}`),
        unit: 'req/s',
      })
    : undefined;
  if (againstEquivalent) figures.push(againstEquivalent);
  figures.push(figure(bench, opts.metrics.bare, { ours: oursRow.reqPerSec, baseline: bareRow.reqPerSec, unit: 'req/s' }));
  const oursCost = costOf(ours);
  const equivCost = costOf(equivalent);
  if (oursCost) {
    const round = (n: number) => Math.round(n * 10) / 10;
    // Named for what they compare: without an equivalent, ours alone.
    const named = (what: string) => `${what}${equivCost ? ' vs minimal equivalent' : ''} (${where})`;
    figures.push(
      figure(bench, named(opts.metrics.cpu), {
        ours: round(oursCost.cpuMicros),
        baseline: equivCost ? round(equivCost.cpuMicros) : null,
        unit: 'µs',
      }),
    );
    figures.push(
      figure(bench, named(opts.metrics.allocated), {
        ours: Math.round(oursCost.allocatedBytes),
        baseline: equivCost ? Math.round(equivCost.allocatedBytes) : null,
        unit: 'bytes',
      }),
    );
  }
  const p99 = figure(bench, opts.metrics.p99, { ours: oursRow.p99, goal: judged(`ours <= ${goals.p99Ms}`), unit: 'ms' });
  const memory = figure(bench, `server RSS after load (${server.embedded ? 'npm start, embedded' : 'npm run serve, Postgres'})`, {
    ours: rss,
    goal: memoryGoal(server.embedded),
    unit: 'MB',
  });
  figures.push(p99, memory);
  const pct = (r: number | null | undefined) => (r === null || r === undefined ? '—' : `${(r * 100).toFixed(1)}%`);
  const checks: string[][] = [];
  if (againstEquivalent) {
    const met = meetsGoal({ ...againstEquivalent, goal: `ratio >= ${goals.ratio}` }) === true;
    checks.push([`${bench} / minimal equivalent req/s (${where})`, pct(againstEquivalent.ratio), `≥ ${goals.ratio * 100}%`, verdict(met)]);
  }
  checks.push(
    [`${bench} / plain route req/s (${where})`, pct(bareRow.reqPerSec ? oursRow.reqPerSec / bareRow.reqPerSec : null), 'reported', '—'],
    [`${bench} p99 (${where})`, `${oursRow.p99} ms`, `≤ ${goals.p99Ms} ms`, verdict(oursRow.p99 <= goals.p99Ms)],
    ['server RSS after the load', `${rss} MB`, `${memory.goal.replace('ours <= ', '≤ ')} MB`, verdict(meetsGoal(memory) === true)],
  );
  process.stdout.write(
    [
      resultsTable([runRows(runs), rows]),
      'combined: req/s over both runs; p50/p99 of the worse run. Latency resolution is 1 ms (autocannon).',
      '',
      formatTable(
        ['process', 'requests', 'CPU µs / request', 'heap bytes / request'],
        [perRequest.map((p) => [p.name, String(p.requests), p.cpuMicros.toFixed(1), p.allocatedBytes.toFixed(0)])],
      ),
      'CPU: every thread of the process over its own runs (bench/server-probe.ts); heap bytes: V8 heap allocation, Buffers not counted.',
      '',
      formatTable(['check', 'measured', 'goal', 'result'], [checks]),
      '',
    ].join('\n'),
  );
  printFigures(figures);
}

/** The memory goal for the server a bench measured, MB after load: `npm run serve` on Postgres, or `npm start` embedded. */
export const memoryGoal = (embedded: boolean) => (embedded ? 'ours <= 300' : 'ours <= 150');
