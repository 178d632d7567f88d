import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { grantCredits, LocalIpData } from '@sightline/core';
import { FUNCTIONS_PREFIX, openCountryReader, readAsnBase } from '@sightline/host';
import { buildHost } from '../packages/host/src/build.ts';
import { createTestEnv } from '../tests/support/app.ts';
import { realIpDeps } from '../tests/support/ip.ts';
import { BUILT_MAIN, childEnv, run as runCommand, startHost } from '../tests/support/process.ts';
import { seedDirectAccount } from '../tests/support/seed.ts';
import { openBenchDatabase } from './database.ts';
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
 * `npm run bench -- ip`:
 * 1. In-process IPv4 classification (parse + lookup of the traffic type) against the `maxmind`
 *    reader on the shipped country MMDB (parse + lookup), same random addresses, same run.
 * 2. RSS after loading all local data (ASN owners, classification, country database), in a probe
 *    process and in the production server, both the `npm run build` output under plain node.
 * 3. ip-to-company over HTTP on cache hits against a bare Hono route on the same server.
 */
const LOOKUPS = 2_000_000;

function randomAddresses(n: number): string[] {
  const out = new Array<string>(n);
  let x = 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    // xorshift: reproducible, spread over the whole space.
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const v = x >>> 0;
    out[i] = `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
  }
  // Flat strings, as a request body's JSON.parse hands them over (template literals build ropes).
  return JSON.parse(JSON.stringify(out)) as string[];
}

// One loop per side, each calling one function, so neither pays for a shared polymorphic call site;
// results are stored rather than branched on, so neither pays for mispredicting its answers.
const sink = new Array<unknown>(1024).fill(null);

function timeOurs(data: LocalIpData, addrs: string[]): number {
  const t0 = performance.now();
  for (let i = 0; i < addrs.length; i++) sink[i & 1023] = data.classifyV4(addrs[i] as string);
  return (addrs.length / (performance.now() - t0)) * 1000;
}

function timeReader(reader: { get(ip: string): unknown }, addrs: string[]): number {
  const t0 = performance.now();
  for (let i = 0; i < addrs.length; i++) sink[i & 1023] = reader.get(addrs[i] as string);
  return (addrs.length / (performance.now() - t0)) * 1000;
}

/** Resident set of a child process, from /proc (Linux) or ps. */
async function rssOf(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    if (kb) return Number(kb) * 1024;
  } catch {
    // not Linux: ask ps
  }
  const out = await runCommand('ps', ['-o', 'rss=', '-p', String(pid)], process.env);
  return Number(out.stdout.trim()) * 1024;
}

/**
 * 1. Classification against the maxmind reader, interleaved twice so drift hits both. Its own
 * function, so the two million address strings and this copy of the data are garbage before the
 * HTTP part, where they would otherwise slow every major GC of the server under test.
 */
async function measureClassification() {
  const data = LocalIpData.fromBase(await readAsnBase());
  const country = await openCountryReader();
  // The first call builds the classification table: load time, not lookup time.
  const tableStart = performance.now();
  data.classifyV4('192.0.2.1');
  const tableMs = performance.now() - tableStart;
  const addrs = randomAddresses(LOOKUPS);
  const warm = addrs.slice(0, 200_000);
  timeOurs(data, warm);
  timeReader(country, warm);
  const o1 = timeOurs(data, addrs);
  const m1 = timeReader(country, addrs);
  const o2 = timeOurs(data, addrs);
  const m2 = timeReader(country, addrs);
  return { oursRate: (o1 + o2) / 2, mmRate: (m1 + m2) / 2, tableMs };
}

/**
 * 2. Memory, measured in processes of their own under plain node (the `npm run build` output), as
 * production runs them; the bench process itself carries tsx, autocannon and test helpers.
 * - the probe: a process that loads all local data (and the bulk table) and nothing else;
 * - the server: `npm run serve` on a fresh Postgres database, without and with its local IP data.
 */
async function measureMemory(url: string | undefined) {
  const outdir = fileURLToPath(new URL('./.build/', import.meta.url));
  await buildHost({ 'ip-memory': 'bench/ip-memory.ts' }, outdir);
  const out = await runCommand(process.execPath, [path.join(outdir, 'ip-memory.mjs')], process.env);
  if (out.code !== 0) throw new Error(`memory probe failed: ${out.stderr}`);
  const probe = JSON.parse(out.stdout) as { before: number; after: number; loadMs: number; probe: Record<string, unknown> };
  if (probe.probe['8.8.8.8'] !== 'hosting' || probe.probe.country !== 'US') throw new Error(`memory probe loaded wrong data: ${out.stdout}`);
  if (!url) return { probe, server: null };

  await buildHost();
  const serverRss = async (ipData: boolean) => {
    const env = childEnv({
      DATABASE_URL: url,
      SIGHTLINE_SECRET: randomBytes(24).toString('hex'),
      PORT: '0',
      HOST: '127.0.0.1',
      IP_DATA: ipData ? '1' : '0',
    });
    const server = await startHost(env, 60_000, { entry: BUILT_MAIN });
    try {
      // Listening means every dependency, the IP data included, is built; let start-up work settle.
      await new Promise((r) => setTimeout(r, 1000));
      return await rssOf(server.proc.pid as number);
    } finally {
      await server.stop();
    }
  };
  return { probe, server: { without: await serverRss(false), with: await serverRss(true) } };
}

export async function run(): Promise<void> {
  const mb = (bytes: number) => Math.round(bytes / 1e6);
  // Memory first, while this process is idle.
  const scratch = process.env.DATABASE_URL ? await openBenchDatabase(1) : undefined;
  let memory: Awaited<ReturnType<typeof measureMemory>>;
  try {
    memory = await measureMemory(scratch?.url);
  } finally {
    await scratch?.drop();
  }
  const { oursRate, mmRate, tableMs } = await measureClassification();

  process.stdout.write(
    [
      'bench ip',
      `  ${machineLine()}`,
      '',
      formatTable(
        ['measure', 'value', 'target', 'result'],
        [
          [
            ['IPv4 classification (parse + lookup)', `${(oursRate / 1e6).toFixed(2)} M/s`, '≥ 3 M/s', verdict(oursRate >= 3e6)],
            ['maxmind reader on the country MMDB', `${(mmRate / 1e6).toFixed(2)} M/s`, '', ''],
            ['ratio', `${(oursRate / mmRate).toFixed(1)}×`, '≥ 10×', verdict(oursRate / mmRate >= 10)],
          ],
          [
            ['local data load (probe process)', `${Math.round(memory.probe.loadMs)} ms`, '', ''],
            ['  of which the bulk classification table', `${Math.round(tableMs)} ms`, '', ''],
            ['RSS, probe process after loading all local data', `${mb(memory.probe.after)} MB`, '≤ 150 MB', verdict(mb(memory.probe.after) <= 150)],
            ['  the same process before loading', `${mb(memory.probe.before)} MB`, '', ''],
            ...(memory.server
              ? [
                  [
                    'RSS, npm run serve (Postgres) after loading it',
                    `${mb(memory.server.with)} MB`,
                    '≤ 150 MB',
                    verdict(mb(memory.server.with) <= 150),
                  ],
                  ['  the same server with IP_DATA=0', `${mb(memory.server.without)} MB`, '', ''],
                ]
              : [['RSS, npm run serve', 'needs DATABASE_URL', '', '']]),
          ],
        ],
      ),
      '',
    ].join('\n'),
  );

  // 3. HTTP on cache hits.
  const seconds = benchDuration();
  // As `npm start` builds it: the in-process recent results in front of Postgres (Redis when configured).
  // On Postgres the server is the production build in its own process, with the IP data it loads
  // itself (in-process recent results, as `npm run serve` builds it without Redis); this process only
  // seeds. On PGlite the app runs here, so it gets the same waterfall here.
  const env = await createTestEnv({ pool: 2, ...(process.env.DATABASE_URL ? {} : { ip: realIpDeps({ recent: true }) }) });
  try {
    const account = await seedDirectAccount(env.deps, 'Bench lookups');
    await grantCredits({ ctx: env.deps, input: { accountId: account.account_id, credits: 1000 } });
    const server = await serveForBench(env, { pool: 2, ipData: true });
    try {
      const bare: Target = { name: 'bare', url: `${server.url}/bench/bare` };
      const lookup: Target = {
        name: 'ip-to-company (cache hit)',
        url: `${server.url}${FUNCTIONS_PREFIX}/ip-to-company`,
        headers: { 'x-access-key': account.key, 'content-type': 'application/json' },
      };
      const body = JSON.stringify({ ip: '17.253.144.10' });
      const first = await fetch(lookup.url, { method: 'POST', headers: lookup.headers, body });
      if (first.status !== 200) throw new Error(`ip-to-company probe returned ${first.status}: ${await first.text()}`);
      await first.body?.cancel();
      const post = { ...lookup, method: 'POST' as const, body };
      for (const t of [bare, post]) await drive(t, WARMUP_SECONDS);
      const runs: Measured[] = [];
      for (const t of [bare, post, post, bare]) runs.push({ name: t.name, result: await drive(t, seconds) });
      const b = combine('bare', runs);
      const l = combine(lookup.name, runs);
      const ratio = l.reqPerSec / b.reqPerSec;
      process.stdout.write(
        [
          `ip-to-company on cache hits — ${CONNECTIONS} connections, ${seconds} s per run; server: ${server.where}`,
          resultsTable([runRows(runs), [b, l]]),
          '',
          formatTable(
            ['check', 'measured', 'target', 'result'],
            [
              [
                ['ip-to-company / bare req/s', `${(ratio * 100).toFixed(1)}%`, '≥ 50%', verdict(ratio >= 0.5)],
                ['ip-to-company p99', `${l.p99} ms`, '≤ 10 ms', verdict(l.p99 <= 10)],
              ],
            ],
          ),
          '',
        ].join('\n'),
      );
      const broken = runs.flatMap(({ name, result }) => {
        const why = failures(result);
        return why ? [`${name}: ${why}`] : [];
      });
      if (broken.length) throw new Error(`unsuccessful responses: ${broken.join(' | ')}`);
    } finally {
      await server.close();
    }
  } finally {
    await env.close();
  }
}
