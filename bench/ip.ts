import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { classifyNetwork, forbiddenIPv4Class, type LocalFacts, LocalIpData, OwnershipSource } from '@sightline/core';
import { createRdapSource, DEFAULT_RDAP_OPTIONS } from '@sightline/core/ip/rdap/index';
import { createReverseDnsSource } from '@sightline/core/ip/reverse-dns/index';
import { openCountryReader, readAsnBase } from '@sightline/host';
import maxmind, { type CountryResponse } from 'maxmind';
import { buildHost } from '../packages/host/src/build.ts';
import { dotted, xorshift32 } from '../tests/support/addresses.ts';
import { BUILT_MAIN, childEnv, REPO_ROOT, run as runCommand, SERVE_NODE_OPTIONS } from '../tests/support/process.ts';
import { openBenchDatabase } from './database.ts';
import { type Figure, figure, formatTable, machineLine, memoryGoal, printFigures, rssOf, verdict } from './lib.ts';

/**
 * `npm run bench -- ip`:
 * 1. What ip-to-company and the tracker identifications run on a cache miss, from the address text
 *    to the local answer with its country: `LocalIpData.facts` (resolve-ip.ts), on the data
 *    `npm run serve` loads, with the country reader buildIpDeps gives it. Against the `maxmind`
 *    reader on an MMDB that holds the same facts (owner, class, country) for every IPv4 address,
 *    on the same addresses, interleaved in one run.
 * 2. RSS after loading all local data (ASN owners, range lists, country table and reader), in a
 *    probe process and in the production server, both the `npm run build` output under plain node.
 * (ip-to-company over HTTP on cache hits is its own bench: bench/ip-to-company.ts.)
 */
const LOOKUPS = 2_000_000;
/** Addresses whose answers ours and the baseline must agree on, drawn like the timed ones. */
const AGREEMENT_SAMPLE = 200_000;

type Base = Awaited<ReturnType<typeof readAsnBase>>;

/**
 * Public addresses as traffic brings them, not uniformly random: a third anywhere in the routed
 * space, a third in the shipped VPN, cloud and datacenter lists, a third in ranges owned by an ASN
 * (a random range, so small networks count as much as big ones). Reserved and private addresses
 * are left out: a lookup answers them before the cache, so a cache miss never sees one.
 */
function addressMix(base: Base, n: number, seed: number): string[] {
  const rnd = xorshift32(seed);
  const owned = base.asn4.arrays();
  const listed = base.ranges?.v4.arrays();
  if (!listed?.starts.length) throw new Error('the shipped range lists did not load');
  const within = (a: { starts: Uint32Array; ends: Uint32Array }) => {
    const i = rnd() % a.starts.length;
    const start = a.starts[i] as number;
    return start + (rnd() % ((a.ends[i] as number) - start + 1));
  };
  const out = new Array<string>(n);
  for (let i = 0; i < n; ) {
    const kind = i % 3;
    const v = kind === 0 ? rnd() : kind === 1 ? within(listed) : within(owned);
    if (forbiddenIPv4Class(v) === null) out[i++] = dotted(v);
  }
  // Flat strings, as a request body's JSON.parse hands them over (template literals build ropes).
  return JSON.parse(JSON.stringify(out)) as string[];
}

/** IPv6 addresses in ranges owned by an ASN, for the general path's line (no baseline). */
function ipv6Mix(base: Base, n: number, seed: number): string[] {
  const rnd = xorshift32(seed);
  const six = base.asn6.arrays();
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const k = rnd() % six.values.length;
    const hi = six.startHi[k] as bigint;
    // Inside the range's first /64 when it has one, else its first address.
    const lo = hi === six.endHi[k] ? (six.startLo[k] as bigint) : BigInt(rnd()) * BigInt(rnd());
    const v = (hi << 64n) | lo;
    out[i] = Array.from({ length: 8 }, (_, g) => ((v >> BigInt(112 - 16 * g)) & 0xffffn).toString(16)).join(':');
  }
  return JSON.parse(JSON.stringify(out)) as string[];
}

/** One record of the baseline MMDB: the facts our answer gives, under MaxMind's ASN field names. */
interface BaselineRecord {
  autonomous_system_number?: number;
  autonomous_system_organization?: string;
  traffic_type?: string;
  country_code?: string;
}

/**
 * The baseline's database: an IPv4 MMDB whose record at each address holds the owner (ASN and
 * organisation), the class and the country, worked out without our merged table: the owner by an
 * interval search of the shipped owner table, the class from the owner's classification
 * (`classifyNetwork`) and the shipped range lists by the waterfall's precedence, the country from
 * the `maxmind` reader on the shipped country MMDB. Its ranges are cut at the boundaries of those
 * three (the country MMDB's found by walking its reader, so nothing of ours decides them). One
 * record per run of addresses that share their facts: a reader that answers everything in one
 * lookup, the strongest plain alternative. (No ASN MMDB ships, so the bench writes this one.)
 */
async function baselineDatabase(base: Base, countryOf: (ip: string) => string | null) {
  const country = await openCountryReader();
  const ranges = base.ranges;
  if (!ranges) throw new Error('the shipped range lists did not load');
  const classes = new Map<number, ReturnType<typeof classifyNetwork>>();
  /** As the waterfall ranks them with nothing imported: a VPN list, a VPN owner, a hosting list, the owner's class. */
  const classAt = (v: number, owner: number): string | null => {
    let c = owner < 0 ? undefined : classes.get(owner);
    if (owner >= 0 && !c) {
      c = classifyNetwork(base.owners.asns[owner] as number, base.owners.names[owner] as string);
      classes.set(owner, c);
    }
    const listIdx = ranges.v4.lookup(v);
    const list = listIdx < 0 ? undefined : ranges.lists[listIdx];
    if (list && (list.kind === 'vpn' || c?.type !== 'vpn')) return list.kind;
    if (!c || c.type === 'unknown') return null;
    if (c.type === 'business') return c.domain && c.companyName ? 'business' : null;
    return c.type;
  };
  const points: number[] = [0];
  for (const index of [base.asn4, base.ranges?.v4]) {
    if (!index) continue;
    for (let i = 0; i < index.boundaryCount; i++) points.push(index.boundaryAt(i));
  }
  for (let at = 0; at < 2 ** 32; ) {
    const [, prefix] = country.getWithPrefixLength(dotted(at));
    points.push(at);
    at += 2 ** (32 - prefix);
  }
  const bounds = Float64Array.from(new Set(points)).sort();
  const records: BaselineRecord[] = [];
  const recordIndex = new Map<string, number>();
  const starts: number[] = [];
  const values: number[] = [];
  for (let i = 0; i < bounds.length; i++) {
    const at = bounds[i] as number;
    if (at >= 2 ** 32) break;
    const ip = dotted(at);
    const owner = base.asn4.lookup(at);
    const record: BaselineRecord = {};
    if (owner >= 0) {
      record.autonomous_system_number = base.owners.asns[owner] as number;
      record.autonomous_system_organization = base.owners.names[owner] as string;
    }
    const type = classAt(at, owner);
    if (type !== null) record.traffic_type = type;
    const code = countryOf(ip);
    if (code !== null) record.country_code = code;
    const key = JSON.stringify(record);
    let value = key === '{}' ? -1 : recordIndex.get(key);
    if (value === undefined) {
      value = records.push(record) - 1;
      recordIndex.set(key, value);
    }
    if (values[values.length - 1] !== value) {
      starts.push(at);
      values.push(value);
    }
  }
  return { bytes: writeIpv4Mmdb(starts, values, records), ranges: starts.length, records: records.length };
}

/**
 * A MaxMind DB (format 2.0, IPv4 tree, 32-bit records) from ranges covering the whole space:
 * range i starts at starts[i] and holds records[values[i]] (-1: no data).
 */
function writeIpv4Mmdb(starts: number[], values: number[], records: BaselineRecord[]): Buffer {
  // Data section: each record once.
  const data: number[] = [];
  const control = (type: number, size: number) => {
    const extended = type > 7;
    const first = (extended ? 0 : type << 5) | (size < 29 ? size : size < 285 ? 29 : size < 65_821 ? 30 : 31);
    data.push(first);
    if (extended) data.push(type - 7);
    if (size >= 65_821) data.push(((size - 65_821) >>> 16) & 255, ((size - 65_821) >>> 8) & 255, (size - 65_821) & 255);
    else if (size >= 285) data.push(((size - 285) >>> 8) & 255, (size - 285) & 255);
    else if (size >= 29) data.push(size - 29);
  };
  const string = (text: string) => {
    const bytes = Buffer.from(text, 'utf8');
    control(2, bytes.length);
    for (const b of bytes) data.push(b);
  };
  const unsigned = (type: 5 | 6 | 9, n: number) => {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
    control(type, bytes.length);
    data.push(...bytes);
  };
  const map = (entries: [string, string | number][]) => {
    control(7, entries.length);
    for (const [k, v] of entries) {
      string(k);
      if (typeof v === 'number') unsigned(6, v);
      else string(v);
    }
  };
  const offsets = records.map((r) => {
    const at = data.length;
    map(Object.entries(r) as [string, string | number][]);
    return at;
  });

  // Search tree, depth first: a block wholly inside one range is a leaf, else a node with two halves.
  const left: number[] = [];
  const right: number[] = [];
  const NO_DATA = -1;
  let r = 0; // the range holding the block's first address
  const block = (first: number, bits: number): number => {
    while (r + 1 < starts.length && (starts[r + 1] as number) <= first) r++;
    const last = first + 2 ** bits - 1;
    const rangeEnd = r + 1 < starts.length ? (starts[r + 1] as number) - 1 : 2 ** 32 - 1;
    if (rangeEnd >= last) return (values[r] as number) < 0 ? NO_DATA : -2 - (values[r] as number);
    const node = left.push(0) - 1;
    right.push(0);
    left[node] = block(first, bits - 1);
    right[node] = block(first + 2 ** (bits - 1), bits - 1);
    return node;
  };
  const root = block(0, 32);
  if (root < 0) throw new Error('the baseline database would hold one record for every address');
  const nodeCount = left.length;
  const recordValue = (v: number) => (v >= 0 ? v : v === NO_DATA ? nodeCount : nodeCount + 16 + (offsets[-2 - v] as number));
  const tree = Buffer.alloc(nodeCount * 8);
  for (let i = 0; i < nodeCount; i++) {
    tree.writeUInt32BE(recordValue(left[i] as number), i * 8);
    tree.writeUInt32BE(recordValue(right[i] as number), i * 8 + 4);
  }

  const dataEnd = data.length;
  data.push(...Buffer.from('ABCDEF4D61784D696E642E636F6D', 'hex'));
  control(7, 9);
  string('binary_format_major_version');
  unsigned(5, 2);
  string('binary_format_minor_version');
  unsigned(5, 0);
  string('build_epoch');
  unsigned(9, Math.floor(Date.now() / 1000));
  string('database_type');
  string('Sightline-Bench-IPv4-Facts');
  string('description');
  control(7, 0);
  string('ip_version');
  unsigned(5, 4);
  string('languages');
  control(11, 0);
  string('node_count');
  unsigned(6, nodeCount);
  string('record_size');
  unsigned(5, 32);
  if (dataEnd > 2 ** 32 - nodeCount - 16) throw new Error('the baseline database is too large for 32-bit records');
  return Buffer.concat([tree, Buffer.alloc(16), Buffer.from(data)]);
}

// One loop per side, each calling one function, so neither pays for a shared polymorphic call site;
// results are stored rather than branched on, so neither pays for mispredicting its answers.
const sink = new Array<unknown>(1024).fill(null);

/**
 * The offline path production runs: the local facts with the network owner's vote, the data loaded
 * with the ownership source as its owner judge (as buildIpDeps loads it), the vote read as resolveFree
 * reads it.
 */
interface Offline {
  data: LocalIpData;
}

/** Milliseconds for addrs[from, to). */
function timeOurs({ data }: Offline, countryOf: (ip: string) => string | null, addrs: string[], from: number, to: number): number {
  const t0 = performance.now();
  for (let i = from; i < to; i++) {
    const facts = data.facts(addrs[i] as string, countryOf);
    sink[i & 1023] = facts?.owner_vote;
  }
  return performance.now() - t0;
}

function timeReader(reader: { get(ip: string): unknown }, addrs: string[], from: number, to: number): number {
  const t0 = performance.now();
  for (let i = from; i < to; i++) sink[i & 1023] = reader.get(addrs[i] as string);
  return performance.now() - t0;
}

/**
 * Both sides over the same addresses, interleaved in chunks of 100,000 (which goes first alternating),
 * twice over: load from the rest of the machine comes and goes within seconds, and each side meets
 * the same share of it. Returns lookups per second for each.
 */
function interleaved(data: Offline, countryOf: (ip: string) => string | null, reader: { get(ip: string): unknown }, addrs: string[]) {
  const CHUNK = 100_000;
  let oursMs = 0;
  let theirsMs = 0;
  let k = 0;
  for (let pass = 0; pass < 2; pass++) {
    for (let from = 0; from < addrs.length; from += CHUNK, k++) {
      const to = Math.min(addrs.length, from + CHUNK);
      if (k % 2 === 0) {
        oursMs += timeOurs(data, countryOf, addrs, from, to);
        theirsMs += timeReader(reader, addrs, from, to);
      } else {
        theirsMs += timeReader(reader, addrs, from, to);
        oursMs += timeOurs(data, countryOf, addrs, from, to);
      }
    }
  }
  return { ours: ((2 * addrs.length) / oursMs) * 1000, theirs: ((2 * addrs.length) / theirsMs) * 1000 };
}

/** The facts both sides give, side by side, for the addresses where they differ. */
function disagreements(
  data: LocalIpData,
  countryOf: (ip: string) => string | null,
  reader: { get(ip: string): BaselineRecord | null },
  addrs: string[],
) {
  const out: string[] = [];
  for (const ip of addrs) {
    const ours = data.facts(ip, countryOf) as LocalFacts;
    const theirs = reader.get(ip) ?? {};
    const a = [ours.asn, ours.org, ours.traffic_type, ours.country_code];
    const b = [
      theirs.autonomous_system_number ?? null,
      theirs.autonomous_system_organization ?? null,
      theirs.traffic_type ?? null,
      theirs.country_code ?? null,
    ];
    if (a.some((v, k) => v !== b[k])) out.push(`${ip}: ours ${JSON.stringify(a)}, baseline ${JSON.stringify(b)}`);
  }
  return out;
}

/**
 * 1. The cache-miss lookup against the maxmind reader on the facts MMDB, interleaved (see
 * `interleaved`). Its own function, so the two million address strings and this copy of the data
 * are garbage before the HTTP part, where they would otherwise slow every major GC of the server
 * under test.
 */
async function measureLookups() {
  const loadStart = performance.now();
  const base = await readAsnBase();
  const data = LocalIpData.fromBase(base, {}, OwnershipSource.fromBase(base));
  const offline: Offline = { data };
  const loadMs = performance.now() - loadStart;
  // As buildIpDeps (assemble.ts) makes it: the shipped country database's reader.
  const country = await openCountryReader();
  const countryOf = (ip: string) => country.get(ip)?.country_code ?? null;

  const built = await baselineDatabase(base, countryOf);
  const file = path.join(os.tmpdir(), `sightline-bench-ip-facts-${process.pid}.mmdb`);
  await writeFile(file, built.bytes);
  const reader = await maxmind.open<CountryResponse & BaselineRecord>(file).finally(() => rm(file, { force: true }));

  const sample = addressMix(base, AGREEMENT_SAMPLE, 0x2545f491);
  // Every range edge of the shipped tables too: the first and last address of each range.
  for (const index of [base.asn4, base.ranges?.v4, base.country?.v4]) {
    if (!index) continue;
    for (let i = 0; i < index.boundaryCount; i += 97) {
      const b = index.boundaryAt(i);
      for (const v of [b - 1, b]) if (v >= 0 && v < 2 ** 32 && forbiddenIPv4Class(v) === null) sample.push(dotted(v));
    }
  }
  const wrong = disagreements(data, countryOf, reader, sample);
  if (wrong.length)
    throw new Error(`ours and the baseline disagree on ${wrong.length} of ${sample.length} addresses, e.g. ${wrong.slice(0, 5).join('; ')}`);

  const addrs = addressMix(base, LOOKUPS, 0x9e3779b9);
  // Warm-up: one whole pass over the addresses on each side, so both are compiled, the reader's LRU
  // is filled, and ours has made the answer (with its owner's vote) of every combination of facts
  // the addresses meet, as a server that has run for a while has: that is done once per
  // combination and process (about 120,000 in all), and its rate is reported apart.
  const firstPassRate = (addrs.length / timeOurs(offline, countryOf, addrs, 0, addrs.length)) * 1000;
  timeReader(reader, addrs, 0, addrs.length);
  const rates = interleaved(offline, countryOf, reader, addrs);
  const six = ipv6Mix(base, 200_000, 0x6a09e667);
  timeOurs(offline, countryOf, six, 0, six.length);
  const v6Rate = (six.length / timeOurs(offline, countryOf, six, 0, six.length)) * 1000;
  return {
    oursRate: rates.ours,
    firstPassRate,
    mmRate: rates.theirs,
    v6Rate,
    loadMs,
    agreed: sample.length,
    baseline: { ranges: built.ranges, records: built.records, mb: built.bytes.length / 1e6 },
  };
}

/**
 * 2. Memory, measured in processes of their own under plain node (the `npm run build` output), as
 * production runs them; the bench process itself carries tsx, autocannon and test helpers.
 * - the probe: a process that loads all local data as the server does, and nothing else;
 * - the server: `npm run serve` on a fresh Postgres database, without and with its local IP data
 *   (measured once the data is loaded: the server starts answering before).
 */
async function measureMemory(url: string | undefined) {
  const outdir = fileURLToPath(new URL('./.build/', import.meta.url));
  await buildHost({ 'ip-memory': 'bench/ip-memory.ts' }, outdir);
  const out = await runCommand(process.execPath, [path.join(outdir, 'ip-memory.mjs')], process.env);
  if (out.code !== 0) throw new Error(`memory probe failed: ${out.stderr}`);
  const probe = JSON.parse(out.stdout) as { before: number; after: number; loadMs: number; probe: Record<string, unknown> };
  if (probe.probe.traffic_type !== 'hosting' || probe.probe.country_code !== 'US') throw new Error(`memory probe loaded wrong data: ${out.stdout}`);
  if (!url) return { probe, server: null };

  await buildHost();
  const serverRss = async (ipData: boolean) => {
    const env = childEnv({
      DATABASE_URL: url,
      SIGHTLINE_SECRET: randomBytes(24).toString('hex'),
      PORT: '0',
      HOST: '127.0.0.1',
      IP_DATA: ipData ? '1' : '0',
      DEMO_PARTNER: '0',
      // The store logs 'local IP data loaded' at info level, on stderr.
      LOG_LEVEL: 'info',
    });
    const server = spawn(process.execPath, [...SERVE_NODE_OPTIONS, BUILT_MAIN], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      // The server answers before its IP data is loaded (it loads behind it): wait for both.
      await new Promise<void>((resolve, reject) => {
        let out = '';
        let err = '';
        const timer = setTimeout(() => reject(new Error(`server not ready in 120 s\n${out}\n${err}`)), 120_000);
        const check = () => {
          if (/listening on http:/.test(out) && (!ipData || /local IP data loaded/.test(err))) {
            clearTimeout(timer);
            resolve();
          }
        };
        server.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          check();
        });
        server.stderr.on('data', (d: Buffer) => {
          err += d.toString();
          check();
        });
        server.on('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`server exited with ${code}\n${out}\n${err}`));
        });
      });
      // Let start-up work settle.
      await new Promise((r) => setTimeout(r, 1000));
      // In bytes, as the probe reports them.
      return ((await rssOf(server.pid as number)) ?? Number.NaN) * 1024 * 1024;
    } finally {
      server.removeAllListeners('exit');
      server.kill('SIGTERM');
      await new Promise((r) => (server.exitCode === null ? server.once('exit', r) : r(undefined)));
    }
  };
  return { probe, server: { without: await serverRss(false), with: await serverRss(true) } };
}

/**
 * What a cache hit of reverse DNS and of RDAP adds to a lookup: each source answers one address
 * once (from an in-process resolver and a canned registry answer: the network is not what is
 * measured), then the same address again and again, awaited as the waterfall awaits it.
 */
async function measureFreeCacheHits(): Promise<{ rdnsUs: number; rdapUs: number }> {
  const ip = '19.12.96.7';
  const reverseDns = createReverseDnsSource({
    resolver: { reverse: async () => ['gw1.ford.com'], resolve: async () => [ip] },
  });
  const network = {
    objectClassName: 'ip network',
    startAddress: '19.12.96.0',
    endAddress: '19.12.96.255',
    ipVersion: 'v4',
    type: 'DIRECT ASSIGNMENT',
    name: 'FORD-NET',
    entities: [{ objectClassName: 'entity', roles: ['registrant'], vcardArray: ['vcard', [['fn', {}, 'text', 'Ford Motor Company']]] }],
  };
  const rdap = createRdapSource(
    { fetch: async () => new Response(JSON.stringify(network), { headers: { 'content-type': 'application/rdap+json' } }) },
    { ...DEFAULT_RDAP_OPTIONS, baseUrl: 'https://rdap.example/' },
  );
  await reverseDns.lookup(ip);
  await rdap.lookup(ip, null);
  await rdap.idle();
  const N = 200_000;
  const perHit = async (lookup: () => Promise<unknown>) => {
    for (let i = 0; i < 20_000; i++) sink[i & 1023] = await lookup();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) sink[i & 1023] = await lookup();
    return ((performance.now() - t0) * 1000) / N;
  };
  return { rdnsUs: await perHit(() => reverseDns.lookup(ip)), rdapUs: await perHit(() => rdap.lookup(ip, null)) };
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
  const lookups = await measureLookups();
  const hits = await measureFreeCacheHits();
  const { oursRate, mmRate } = lookups;
  const lookupRatio = oursRate / mmRate;
  const serverMb = memory.server ? mb(memory.server.with) : null;
  const figures: Figure[] = [
    figure('ip', 'a reverse-DNS cache hit, per lookup', { ours: Math.round(hits.rdnsUs * 100) / 100, goal: 'ours <= 50', unit: 'µs' }),
    figure('ip', 'an RDAP cache hit, per lookup', { ours: Math.round(hits.rdapUs * 100) / 100, goal: 'ours <= 50', unit: 'µs' }),
    figure(
      'ip',
      "IPv4 cache-miss lookups/s, address text to answer with country and the owner's vote (facts + ownership) vs maxmind reader, same facts",
      {
        ours: Math.round(oursRate),
        baseline: Math.round(mmRate),
        goal: 'ratio >= 10 and ours >= 3000000',
        unit: 'lookups/s',
      },
    ),
    figure('ip', "IPv4 lookups/s on the first pass, each combination of facts and its owner's vote made on first use (reported)", {
      ours: Math.round(lookups.firstPassRate),
      unit: 'lookups/s',
    }),
    figure('ip', 'RSS after loading all local IP data (probe process, plain node)', { ours: mb(memory.probe.after), unit: 'MB' }),
    ...(serverMb === null
      ? []
      : [figure('ip', 'server RSS after load (npm run serve, Postgres, IP data)', { ours: serverMb, goal: memoryGoal(false), unit: 'MB' })]),
  ];

  process.stdout.write(
    [
      'bench ip',
      `  ${machineLine()}`,
      `  addresses: ${LOOKUPS.toLocaleString('en')} public IPv4, a third anywhere, a third in the shipped VPN/cloud/datacenter lists, a third in ASN-owned ranges`,
      `  baseline: maxmind reader (maxmind.open, its default cache) on an IPv4 MMDB of the same facts: ${lookups.baseline.ranges.toLocaleString('en')} ranges, ${lookups.baseline.records.toLocaleString('en')} records, ${lookups.baseline.mb.toFixed(1)} MB`,
      `  agreement: ours and the baseline gave the same owner, class and country for ${lookups.agreed.toLocaleString('en')} addresses (sampled and range edges)`,
      '',
      formatTable(
        ['measure', 'value', 'target', 'result'],
        [
          [
            ['IPv4 cache-miss lookup (parse to answer + country)', `${(oursRate / 1e6).toFixed(2)} M/s`, '≥ 3 M/s', verdict(oursRate >= 3e6)],
            ['maxmind reader on the facts MMDB', `${(mmRate / 1e6).toFixed(2)} M/s`, '', ''],
            ['ratio', `${lookupRatio.toFixed(1)}×`, '≥ 10×', verdict(lookupRatio >= 10)],
            ['IPv6 (general path, country from the reader)', `${(lookups.v6Rate / 1e6).toFixed(2)} M/s`, '', ''],
          ],
          [
            ['local data load (probe process)', `${Math.round(memory.probe.loadMs)} ms`, '', ''],
            ['local data load (this process, tsx)', `${Math.round(lookups.loadMs)} ms`, '', ''],
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

  printFigures(figures);
}
