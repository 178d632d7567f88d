import { grantCredits, ipv4ToNumber, LocalIpData } from '@sightline/core';
import { FUNCTIONS_PREFIX, openCountryReader, readAsnBase } from '@sightline/host';
import { createTestEnv } from '../tests/support/app.ts';
import { realIpDeps } from '../tests/support/ip.ts';
import { seedDirectAccount } from '../tests/support/seed.ts';
import {
  benchDuration,
  combine,
  CONNECTIONS,
  drive,
  failures,
  formatTable,
  listen,
  machineLine,
  resultsTable,
  runRows,
  verdict,
  WARMUP_SECONDS,
  type Measured,
  type Target,
} from './lib.ts';

/**
 * `npm run bench -- ip`:
 * 1. In-process IPv4 classification (parse + lookup of the traffic type) against the `maxmind`
 *    reader on the shipped country MMDB (parse + lookup), same random addresses, same run.
 * 2. RSS after loading all local data (ASN owners, classification, country database).
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
  return out;
}

function timeLoop(addrs: string[], fn: (ip: string) => unknown): number {
  let sink = 0;
  const t0 = performance.now();
  for (let i = 0; i < addrs.length; i++) if (fn(addrs[i] as string)) sink++;
  const ms = performance.now() - t0;
  if (sink < 0) throw new Error('unreachable');
  return (addrs.length / ms) * 1000;
}

export async function run(): Promise<void> {
  const mb = () => Math.round(process.memoryUsage().rss / 1e6);
  const rssBefore = mb();
  const t0 = performance.now();
  const data = LocalIpData.fromBase(await readAsnBase());
  const country = await openCountryReader();
  const loadMs = performance.now() - t0;
  (globalThis as { gc?: () => void }).gc?.();
  const rssAfter = mb();

  // 1. Classification against the maxmind reader, interleaved twice so drift hits both.
  const addrs = randomAddresses(LOOKUPS);
  const ours = (ip: string) => data.trafficTypeV4(ipv4ToNumber(ip));
  const theirs = (ip: string) => country.get(ip);
  timeLoop(addrs.slice(0, 200_000), ours);
  timeLoop(addrs.slice(0, 200_000), theirs);
  const o1 = timeLoop(addrs, ours);
  const m1 = timeLoop(addrs, theirs);
  const o2 = timeLoop(addrs, ours);
  const m2 = timeLoop(addrs, theirs);
  const oursRate = (o1 + o2) / 2;
  const mmRate = (m1 + m2) / 2;

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
            ['local data load time', `${Math.round(loadMs)} ms`, '', ''],
            ['RSS after loading all local data', `${rssAfter} MB`, '≤ 150 MB', verdict(rssAfter <= 150)],
            ['  of which the process had before loading', `${rssBefore} MB`, '', ''],
          ],
        ],
      ),
      '',
    ].join('\n'),
  );

  // 3. HTTP on cache hits.
  const seconds = benchDuration();
  // As `npm start` builds it: the in-process hot cache in front of Postgres (Redis when configured).
  const env = await createTestEnv({ pool: 2, ip: realIpDeps({ hotCache: true }) });
  try {
    env.app.get('/bench/bare', (c) => c.json({ success: true }));
    const account = await seedDirectAccount(env.deps, 'Bench lookups');
    await grantCredits({ ctx: env.deps, input: { accountId: account.account_id, credits: 1000 } });
    const server = await listen(env.app);
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
          `ip-to-company on cache hits — ${env.db.kind === 'postgres' ? 'Postgres (pool 2)' : 'PGlite (one connection)'}, ${CONNECTIONS} connections, ${seconds} s per run`,
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
