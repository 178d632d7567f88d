import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { parentPort, Worker, workerData } from 'node:worker_threads';
import { serve } from '@hono/node-server';
import autocannon from 'autocannon';
import { buildHost } from '../packages/host/src/build.ts';
import { TEST_SECRET, type TestEnv } from '../tests/support/app.ts';
import { childEnv, startHost } from '../tests/support/process.ts';

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

/** A real HTTP server on a free loopback port, the way `npm start` serves the app. */
export async function listen(app: { fetch: (req: Request) => Response | Promise<Response> }): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
      resolve({
        url: `http://127.0.0.1:${info.port}`,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((err) => (err ? fail(err) : done()));
            // autocannon leaves keep-alive sockets behind; without this close() waits for their idle timeout.
            if ('closeAllConnections' in server) (server as Server).closeAllConnections();
          }),
      });
    });
    server.once('error', reject);
  });
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

/**
 * Where the HTTP benches send their load. On Postgres: the production build of the host in its own
 * node process (see server-entry.ts), so the figures are those of `npm run serve`, with no tsx in
 * the server and no load generator in its process. On the embedded database, which a second
 * process cannot share, the app is served from this process instead.
 */
export async function serveForBench(
  env: TestEnv,
  opts: {
    pool: number;
    ipData: boolean;
    /** Extra server environment (e.g. TRUSTED_PROXIES); Postgres only. */
    env?: Record<string, string>;
  },
): Promise<Listening & { where: string }> {
  if (!env.url) {
    env.app.get('/bench/bare', (c) => c.json({ success: true }));
    return { ...(await listen(env.app)), where: 'this process (tsx), embedded PGlite' };
  }
  await buildHost({ 'bench-server': 'bench/server-entry.ts' });
  // childEnv: no Redis, as the ip bench states (an in-process hot cache, like `npm run serve` alone).
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
  const server = await startHost(serverEnv, 60_000, { entry: 'packages/host/dist/bench-server.mjs' });
  return {
    url: `http://127.0.0.1:${server.port}`,
    where: `npm run build output under plain node, its own process (pid ${server.proc.pid}), postgres.js pool ${opts.pool}`,
    close: async () => {
      await server.stop();
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
