import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { grantCredits, parseCidr, parseCidrList, type RangeList } from '@sightline/core';
import { type RangeListEntry, readRangeManifest, readShippedRanges, runOperatorCommand, shippedRangesDir, shippedRangesFrom } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xorshift32 } from './support/addresses.ts';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { realIpDeps } from './support/ip.ts';
import { seedDirectAccount } from './support/seed.ts';

/**
 * The VPN and hosting range lists shipped in packages/core/data/ip-ranges/: what the folder holds,
 * how a line is read, how overlapping lists resolve, and that the operator's imports still come
 * first. (Out-of-the-box answers for well-known addresses: tests/ip-classification.test.ts.)
 */
const DIR = shippedRangesDir();
let manifest: RangeListEntry[];
beforeAll(async () => {
  manifest = await readRangeManifest();
});

async function filesUnder(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await filesUnder(path.join(dir, e.name), rel)));
    else out.push(rel);
  }
  return out;
}

describe('the shipped data folder', () => {
  it('holds exactly the lists the manifest names, each upstream’s licence and readme, and the provenance', async () => {
    const named = manifest.flatMap((l) => l.files);
    const upstreams = [...new Set(named.map((f) => f.split('/')[0] as string))].sort();
    expect(upstreams).toEqual(['ipranges', 'x4bnet-lists_vpn']);
    const provenance = ['README.md', 'lists.json', ...upstreams.flatMap((u) => [`${u}/LICENSE`, `${u}/README.upstream.md`])];
    expect((await filesUnder(DIR)).sort()).toEqual([...named, ...provenance].sort());
  });

  it('has no line the importer would reject, so nothing is silently dropped at start', async () => {
    for (const list of manifest) {
      for (const file of list.files) {
        const parsed = parseCidrList(await readFile(path.join(DIR, file), 'utf8'));
        expect({ file, rejected: parsed.rejected, samples: parsed.rejectedSamples }).toEqual({ file, rejected: 0, samples: [] });
        expect(parsed.kept, file).toBeGreaterThan(0);
      }
    }
  });

  it('stays small: under 3 MB of text', async () => {
    let bytes = 0;
    for (const f of await filesUnder(DIR)) bytes += (await stat(path.join(DIR, f))).size;
    expect(bytes).toBeLessThan(3_000_000);
  });

  it('lists VPN lists before hosting lists, and names every VPN list it can', () => {
    const kinds = manifest.map((l) => l.kind);
    expect(kinds.lastIndexOf('vpn')).toBeLessThan(kinds.indexOf('hosting'));
    expect(manifest.find((l) => l.id === 'protonvpn')).toMatchObject({ kind: 'vpn', provider: 'Proton VPN' });
    expect(manifest.find((l) => l.id === 'apple-proxy')).toMatchObject({ kind: 'vpn', provider: 'iCloud Private Relay' });
  });

  it('loads into segments that cover every listed range', async () => {
    const shipped = await readShippedRanges();
    expect(shipped.lists.map((l) => l.id)).toEqual(manifest.map((l) => l.id));
    expect(shipped.v4.size).toBeGreaterThan(30_000);
    expect(shipped.v6.size).toBeGreaterThan(15_000);
    // Every 97th row of every list, at its first and last address.
    for (const list of manifest) {
      for (const file of list.files) {
        const lines = (await readFile(path.join(DIR, file), 'utf8')).split('\n').filter(Boolean);
        for (let k = 0; k < lines.length; k += 97) {
          const c = parseCidr(lines[k] as string);
          if (!c) throw new Error(`${file}: ${lines[k]}`);
          for (const at of [c.start, c.end]) {
            const hit = c.version === 4 ? shipped.v4.lookup(at as number) : shipped.v6.lookup(at as bigint);
            // A VPN row always answers VPN; a hosting row hosting, or VPN where a VPN list covers it.
            const kind = shipped.lists[hit]?.kind;
            expect(kind === 'vpn' || kind === list.kind, `${list.id}: ${lines[k]}`).toBe(true);
          }
        }
      }
    }
  });
});

describe('reading and resolving range lists', () => {
  const vpn = (id: string, provider: string | null = null): RangeList => ({ id, kind: 'vpn', provider, reason: 'is a known VPN exit' });
  const hosting = (id: string, provider: string | null = null): RangeList => ({
    id,
    kind: 'hosting',
    provider,
    reason: 'is in a known hosting or cloud range',
  });
  const text = (s: string) => Buffer.from(s);
  const v4 = (ip: string) => {
    const c = parseCidr(ip);
    if (c?.version !== 4) throw new Error(ip);
    return c.start;
  };
  const v6 = (ip: string) => {
    const c = parseCidr(ip);
    if (c?.version !== 6) throw new Error(ip);
    return c.start;
  };

  it('reads lines as parseCidrList does: comments, blanks, CRLF, bare addresses and host bits; skips and counts the rest', () => {
    const r = shippedRangesFrom([
      {
        list: hosting('a'),
        files: [text('# header\r\n10.1.2.3/8\r\n\n  192.0.2.7  # inline\n01.2.3.4\n300.1.1.1/24\n2001:db8::1/32\n10.0.0.0/33\nnot-a-cidr')],
      },
    ]);
    expect(r.rejected).toBe(4);
    expect([r.v4.lookup(v4('10.255.0.1')), r.v4.lookup(v4('192.0.2.7')), r.v4.lookup(v4('192.0.2.8')), r.v4.lookup(v4('11.0.0.0'))]).toEqual([
      0, 0, -1, -1,
    ]);
    expect([r.v6.lookup(v6('2001:db8:ffff::1')), r.v6.lookup(v6('2001:db9::'))]).toEqual([0, -1]);
    const same = parseCidrList('# header\r\n10.1.2.3/8\r\n\n  192.0.2.7  # inline\n01.2.3.4\n300.1.1.1/24\n2001:db8::1/32\n10.0.0.0/33\nnot-a-cidr');
    expect(same.rejected).toBe(r.rejected);
  });

  it('accepts exactly the lines parseCidr accepts, each as the same range', () => {
    const lines = [
      '0.0.0.0/0',
      '255.255.255.255',
      '1.2.3.4/31',
      '1.2.3.4/032',
      '1.2.3.04',
      '1.2.3',
      '1.2.3.4/',
      '1.2.3.4/33',
      '256.1.1.1',
      '::/0',
      '::',
      '::1',
      'fe80::',
      '2001:DB8::/32',
      '1:2:3:4:5:6:7:8/128',
      '1:2:3:4:5:6:7::',
      '::2:3:4:5:6:7:8',
      '1::2::3',
      '12345::/16',
      ':1::',
      '1:2:3:4:5:6:7:8:9',
      '2001:db8::/129',
      '2001:db8::/0129',
      '::ffff:1.2.3.4/120',
      '2001:db8:::1',
      'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/127',
    ];
    for (const line of lines) {
      const c = parseCidr(line);
      const built = shippedRangesFrom([{ list: hosting('one'), files: [text(`${line}\n`)] }]);
      expect(built.rejected, line).toBe(c ? 0 : 1);
      if (!c) continue;
      const at = (ip: number | bigint) => (c.version === 4 ? built.v4.lookup(ip as number) : built.v6.lookup(ip as bigint));
      const top = c.version === 4 ? 0xffffffff : (1n << 128n) - 1n;
      expect([at(c.start), at(c.end)], line).toEqual([0, 0]);
      if (c.start > 0) expect(at(c.version === 4 ? c.start - 1 : c.start - 1n), line).toBe(-1);
      if (c.end < top) expect(at(c.version === 4 ? c.end + 1 : c.end + 1n), line).toBe(-1);
    }
  });

  it('a VPN list beats a hosting list even where the hosting range is more specific', () => {
    const r = shippedRangesFrom([
      { list: vpn('vpn'), files: [text('10.0.0.0/16\n')] },
      { list: hosting('dc'), files: [text('10.0.5.0/24\n10.0.0.0/8\n')] },
    ]);
    expect([r.v4.lookup(v4('10.0.5.1')), r.v4.lookup(v4('10.0.0.1')), r.v4.lookup(v4('10.1.0.1'))]).toEqual([0, 0, 1]);
  });

  it('within a kind the most specific range wins, then the list named first', () => {
    const r = shippedRangesFrom([
      { list: hosting('cloud', 'Cloud'), files: [text('10.0.0.0/16\n172.16.0.0/24\n')] },
      { list: hosting('crawler', 'Crawler'), files: [text('10.0.7.0/24\n')] },
      { list: hosting('datacenter'), files: [text('10.0.0.0/8\n172.16.0.0/24\n')] },
    ]);
    expect([r.v4.lookup(v4('10.0.7.9')), r.v4.lookup(v4('10.0.8.9')), r.v4.lookup(v4('10.9.0.1')), r.v4.lookup(v4('172.16.0.1'))]).toEqual([
      1, 0, 2, 0,
    ]);
  });

  it('agrees with a brute-force scan on random nested lists, IPv4 and IPv6, up to the top of the space', () => {
    const rnd = xorshift32(0x1234567);
    const lists: RangeList[] = [vpn('a', 'A'), vpn('b'), hosting('c', 'C'), hosting('d'), hosting('e')];
    const rows: { list: number; text: string; v: 4 | 6; start: bigint; end: bigint; prefix: number }[] = [];
    for (let i = 0; i < 600; i++) {
      const list = rnd() % lists.length;
      const six = i % 3 === 0;
      const prefix = six ? 8 + (rnd() % 121) : 4 + (rnd() % 29);
      const bits = six ? 128 : 32;
      const max = (1n << BigInt(bits)) - 1n;
      // Random bits only in the top 34, so wide blocks hold many narrow ones; every 50th block
      // reaches the top of the space.
      const addr = i % 50 === 0 ? max : (BigInt(rnd() % 4) << BigInt(bits - 2)) | (BigInt(rnd()) << BigInt(Math.max(0, bits - 34)));
      const host = (1n << BigInt(bits - prefix)) - 1n;
      const start = addr & ~host & max;
      const textAddr = six
        ? Array.from({ length: 8 }, (_, k) => ((start >> BigInt(112 - 16 * k)) & 0xffffn).toString(16)).join(':')
        : [24, 16, 8, 0].map((s) => Number((start >> BigInt(s)) & 255n)).join('.');
      rows.push({ list, text: `${textAddr}/${prefix}`, v: six ? 6 : 4, start, end: start | host, prefix });
    }
    const built = shippedRangesFrom(
      lists.map((list, i) => ({
        list,
        files: [
          text(
            rows
              .filter((r) => r.list === i)
              .map((r) => r.text)
              .join('\n'),
          ),
        ],
      })),
    );
    expect(built.rejected).toBe(0);
    const brute = (v: 4 | 6, ip: bigint) => {
      let best: (typeof rows)[number] | undefined;
      for (const r of rows) {
        if (r.v !== v || r.start > ip || r.end < ip) continue;
        const rank = (q: typeof r) => ((lists[q.list] as RangeList).kind === 'vpn' ? 0 : 1);
        if (!best || rank(r) < rank(best) || (rank(r) === rank(best) && (r.prefix > best.prefix || (r.prefix === best.prefix && r.list < best.list))))
          best = r;
      }
      return best ? best.list : -1;
    };
    for (const r of rows) {
      const max = (1n << BigInt(r.v === 4 ? 32 : 128)) - 1n;
      for (const ip of [r.start, r.end, r.start - 1n, r.end + 1n, (r.start + r.end) / 2n]) {
        if (ip < 0n || ip > max) continue;
        const got = r.v === 4 ? built.v4.lookup(Number(ip)) : built.v6.lookup(ip);
        expect(got, `${r.v} ${ip.toString(16)}`).toBe(brute(r.v, ip));
      }
    }
  });

  it('refuses a manifest that names an unknown kind, climbs out of its folder or repeats a list', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sightline-ranges-'));
    try {
      const entry = { id: 'x', kind: 'vpn', provider: null, reason: 'is a known VPN exit', files: ['x.txt'], why: 'test' };
      await writeFile(path.join(dir, 'x.txt'), '10.0.0.0/8\n');
      for (const lists of [[{ ...entry, kind: 'proxy' }], [{ ...entry, files: ['../x.txt'] }], [entry, entry], [{ ...entry, provider: '' }]]) {
        await writeFile(path.join(dir, 'lists.json'), JSON.stringify({ lists }));
        await expect(readShippedRanges(dir)).rejects.toThrow(/malformed or repeats/);
      }
      await writeFile(path.join(dir, 'lists.json'), JSON.stringify({ lists: [entry] }));
      expect((await readShippedRanges(dir)).v4.lookup(0x0a000001)).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the importers layer on top of the shipped lists', () => {
  let env: TestEnv;
  let key: string;
  let dir: string;
  beforeAll(async () => {
    env = await createTestEnv({ ip: realIpDeps() });
    const account = await seedDirectAccount(env.deps, 'Shipped ranges');
    await grantCredits({ ctx: env.deps, input: { accountId: account.account_id, credits: 100 } });
    key = account.key;
    dir = await mkdtemp(path.join(tmpdir(), 'sightline-ranges-import-'));
  });
  afterAll(async () => {
    await env.close();
    await rm(dir, { recursive: true, force: true });
  });
  // A fresh account per question, so no cached answer stands in for the current data.
  const lookup = async (ip: string) => {
    const fresh = await seedDirectAccount(env.deps, `Lookup ${ip} ${Math.random()}`);
    return (await call(env, 'ip-to-company', { key: fresh.key, body: { ip } })).body;
  };

  it('answers VPN and hosting from the shipped lists with nothing imported, free', async () => {
    expect(await lookup('5.253.204.162')).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'Proton VPN', identified: false });
    expect(await lookup('3.5.140.1')).toMatchObject({
      traffic_type: 'hosting',
      reason: 'The address is in a known hosting or cloud range (Amazon Web Services).',
    });
    expect((await call(env, 'ip-to-company', { key, body: { ip: '172.224.226.1' } })).body).toMatchObject({
      traffic_type: 'vpn',
      vpn_provider: 'iCloud Private Relay',
    });
  });

  it('an imported range overrides a shipped one (import-ranges), and refreshing a shipped list changes none of its answers', async () => {
    const office = path.join(dir, 'office.txt');
    await writeFile(office, '3.5.140.0/24\n');
    expect(await runOperatorCommand(env.deps, 'import-ranges', { kind: 'isp', file: office, provider: 'Office ISP' })).toMatchObject({
      kept: 1,
      inserted: 1,
    });
    expect(await lookup('3.5.140.1')).toMatchObject({ traffic_type: 'isp' });
    expect(await lookup('3.5.141.1')).toMatchObject({ traffic_type: 'hosting' });

    const proton = manifest.find((l) => l.id === 'protonvpn');
    if (!proton?.provider) throw new Error('no Proton VPN list');
    const file = path.join(DIR, proton.files[0] as string);
    const sample = (await readFile(file, 'utf8'))
      .split('\n')
      .filter(Boolean)
      .filter((_, i) => i % 97 === 0);
    const before = await Promise.all(sample.map(async (cidr) => lookup(cidr.split('/')[0] as string)));
    const out = await runOperatorCommand(env.deps, 'import-ranges', { kind: 'vpn', file, provider: proton.provider });
    expect(out).toMatchObject({ rejected: 0 });
    for (const [i, cidr] of sample.entries()) {
      const after = await lookup(cidr.split('/')[0] as string);
      const was = before[i] as Record<string, unknown>;
      expect({ traffic_type: after.traffic_type, vpn_provider: after.vpn_provider }, cidr).toEqual({
        traffic_type: was.traffic_type,
        vpn_provider: was.vpn_provider,
      });
    }
  });
});
