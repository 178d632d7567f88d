import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import {
  classifyNetwork,
  Ipv4Index,
  Ipv6Index,
  ipv4ToNumber,
  LocalIpData,
  parseCidr,
  parseCidrList,
  parseCloudRanges,
  parseCompanyCsv,
  parseIp,
} from '@sightline/core';
import { openCountryReader, readAsnBase, readNetworkOwners } from '@sightline/host';
import { beforeAll, describe, expect, it } from 'vitest';
import { dotted, xorshift32 } from './support/addresses.ts';

/** The range lists the product ships (packages/core/data/ip-ranges/README.md says where from). */
const SHIPPED = new URL('../packages/core/data/ip-ranges/', import.meta.url);

let base: Awaited<ReturnType<typeof readAsnBase>>;
let data: LocalIpData;
let country: Awaited<ReturnType<typeof openCountryReader>>;
beforeAll(async () => {
  base = await readAsnBase();
  data = LocalIpData.fromBase(base);
  country = await openCountryReader();
});

const bigToV6 = (v: bigint) => Array.from({ length: 8 }, (_, k) => ((v >> BigInt(112 - 16 * k)) & 0xffffn).toString(16)).join(':');

/** The traffic type of the cache-miss lookup, as ip-to-company asks it (LocalIpData.facts). */
const typeOf = (d: LocalIpData, ip: string) => d.facts(ip, (a) => country.get(a)?.country_code ?? null)?.traffic_type ?? null;

const look = (ip: string) => {
  const parsed = parseIp(ip);
  if (!parsed) throw new Error(`bad ip ${ip}`);
  return data.lookup(parsed);
};

describe('shipped data classifies well-known networks', () => {
  it.each([
    ['3.5.140.1', 'hosting', 16509, 'a cloud provider (AWS)'],
    ['2600:1f18::1', 'hosting', 14618, 'AWS over IPv6 (Amazon-AES)'],
    ['8.8.8.8', 'hosting', 15169, 'Google'],
    ['193.60.0.1', 'education', 786, 'a university network (JANET)'],
    ['2001:630::1', 'education', 786, 'JANET over IPv6'],
    ['80.128.0.1', 'isp', 3320, 'a national telecom (Deutsche Telekom)'],
    ['2003::1', 'isp', 3320, 'Deutsche Telekom over IPv6'],
    ['185.65.134.1', 'vpn', 39351, 'a VPN provider (Mullvad)'],
    ['198.116.0.1', 'government', 297, 'a government network (NASA)'],
    ['17.253.144.10', 'business', 714, 'an enterprise with its own ASN (Apple)'],
    ['140.82.112.3', 'business', 36459, 'GitHub'],
  ])('%s → %s (AS%s, %s)', (ip, type, asn) => {
    const a = look(ip);
    expect(a.traffic_type).toBe(type);
    expect(a.asn).toBe(asn);
  });

  it('the cache-miss lookup agrees with the lookup of a parsed address on 20,000 random addresses', () => {
    const rnd = xorshift32(777);
    for (let i = 0; i < 20_000; i++) {
      const ip = dotted(rnd());
      expect(typeOf(data, ip)).toBe(look(ip).traffic_type);
    }
  });

  it('the cache-miss lookup agrees with the lookup of a parsed address at segment edges, with imported layers on top', () => {
    // Small imported ranges that split /24s and /20s of networks whose class differs from theirs.
    const layered = LocalIpData.fromBase(base, {
      overlays4: [
        { start: ipv4ToNumber('8.8.8.16'), end: ipv4ToNumber('8.8.8.23'), kind: 'vpn', provider: 'Edge VPN' },
        { start: ipv4ToNumber('80.128.0.0'), end: ipv4ToNumber('80.128.15.255'), kind: 'hosting', provider: null },
        { start: ipv4ToNumber('193.60.1.128'), end: ipv4ToNumber('193.60.1.128'), kind: 'isp', provider: null },
      ],
      companies4: [
        {
          start: ipv4ToNumber('3.5.140.77'),
          end: ipv4ToNumber('3.5.140.77'),
          domain: 'edge.example',
          company_name: 'Edge',
          confidence: 0.9,
          source: 'import',
        },
      ],
    });
    const full = (ip: string) => layered.lookup(parseIp(ip) as NonNullable<ReturnType<typeof parseIp>>).traffic_type;
    const probes: number[] = [];
    for (const anchor of ['8.8.8.16', '8.8.8.23', '80.128.0.0', '80.128.15.255', '193.60.1.128', '3.5.140.77', '0.0.0.0', '255.255.255.255']) {
      const v = ipv4ToNumber(anchor);
      for (let d = -2; d <= 2; d++) if (v + d >= 0 && v + d <= 0xffffffff) probes.push(v + d);
    }
    // Every 50th segment edge of the shipped owner table and every 10th of the shipped range
    // lists, and their neighbours.
    const shipped = base.ranges?.v4;
    if (!shipped) throw new Error('the shipped range lists did not load');
    const everyNth: [Ipv4Index, number][] = [
      [base.asn4, 50],
      [shipped, 10],
    ];
    for (const [index, step] of everyNth) {
      for (let i = 0; i < index.boundaryCount; i += step) {
        const b = index.boundaryAt(i);
        for (const ip of [b - 1, b]) if (ip >= 0 && ip <= 0xffffffff) probes.push(ip);
      }
    }
    for (const v of probes) expect(typeOf(layered, dotted(v)), dotted(v)).toBe(full(dotted(v)));
    expect(typeOf(layered, '8.8.8.20')).toBe('vpn');
    expect(typeOf(layered, '80.128.3.1')).toBe('hosting');
    expect(typeOf(layered, '3.5.140.77')).toBe('business');
    expect(typeOf(layered, 'not an address')).toBeNull();
  });

  it('names the VPN provider and the enterprise domain', () => {
    expect(look('185.65.134.1').vpn_provider).toBe('Mullvad');
    expect(look('17.253.144.10').company).toMatchObject({ domain: 'apple.com', company_name: 'Apple Inc.', source: 'asn' });
  });

  it('leaves an unclassified company network to the providers, naming the owner', () => {
    const a = look('81.2.69.142');
    expect(a.traffic_type).toBeNull();
    expect(a.reason).toMatch(/Andrews & Arnold/);
  });

  it('reads the country from the combined IPv4+IPv6 MMDB (IPv6 answers correctly)', () => {
    expect(country.get('80.128.0.1')?.country_code).toBe('DE');
    expect(country.get('2003::1')?.country_code).toBe('DE');
    expect(country.get('2001:630::1')?.country_code).toBe('GB');
  });

  it('classifies by organisation name when the ASN is not curated', () => {
    expect(classifyNetwork(4_200_000_001, 'University of Somewhere').type).toBe('education');
    expect(classifyNetwork(4_200_000_002, 'Ministry of Finance').type).toBe('government');
    expect(classifyNetwork(4_200_000_003, 'Example Hosting Ltd').type).toBe('hosting');
    expect(classifyNetwork(4_200_000_004, 'Example Broadband Telecom').type).toBe('isp');
    expect(classifyNetwork(4_200_000_005, 'FastVPN Networks').type).toBe('vpn');
    expect(classifyNetwork(4_200_000_006, 'Acme Widgets Inc.').type).toBeNull();
    // Access networks named for their network (a word ending in -net), a Russian carrier's
    // "svyaz" (communications), an internet exchange; the words that merely end in -net do not count.
    expect(classifyNetwork(4_200_000_007, 'BershNet Ltd.').type).toBe('isp');
    expect(classifyNetwork(4_200_000_008, 'Intelsvyaz Ltd.').type).toBe('isp');
    expect(classifyNetwork(4_200_000_009, 'PP "IF-IX"').type).toBe('isp');
    expect(classifyNetwork(4_200_000_010, 'Planet Fitness, Inc.').type).toBeNull();
    expect(classifyNetwork(4_200_000_011, 'Magnet Forensics Inc.').type).toBeNull();
  });
});

describe('shipped range lists classify out of the box, with nothing imported', () => {
  let owners: LocalIpData;
  beforeAll(async () => {
    owners = LocalIpData.fromBase(await readNetworkOwners());
  });
  const ownersOnly = (ip: string) => owners.lookup(parseIp(ip) as NonNullable<ReturnType<typeof parseIp>>);

  it('an X4BNet-listed VPN exit is a VPN, where the network owner alone left it to the paid providers', () => {
    // NordVPN's exits on PacketHub's network: no name rule or curated ASN says VPN.
    expect(ownersOnly('2.56.252.1').traffic_type).toBeNull();
    expect(look('2.56.252.1')).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'PacketHub S.A.', asn: 136787 });
    expect(typeOf(data, '2.56.252.1')).toBe('vpn');
  });

  it('a list that names its VPN names the provider', () => {
    // A Proton VPN server on M247, a hosting network.
    expect(ownersOnly('5.253.204.162').traffic_type).toBe('hosting');
    expect(look('5.253.204.162')).toMatchObject({
      traffic_type: 'vpn',
      vpn_provider: 'Proton VPN',
      reason: 'The address is a known VPN exit (Proton VPN).',
    });
  });

  it('Mullvad stays a VPN named Mullvad although X4BNet’s datacenter list covers its range: VPN before hosting', () => {
    expect(look('185.65.134.1')).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'Mullvad', asn: 39351 });
    expect(typeOf(data, '185.65.134.1')).toBe('vpn');
  });

  it('iCloud Private Relay is a VPN: a person behind a relay that hides their network, IPv4 and IPv6', () => {
    for (const ip of ['172.224.226.1', '2a02:26f7:b3c0:4000::1']) {
      expect(ownersOnly(ip).traffic_type, ip).toBe('hosting');
      expect(look(ip), ip).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'iCloud Private Relay', company: null });
    }
  });

  it.each([
    ['3.5.140.1', 'Amazon Web Services'],
    ['2600:1f18::1', 'Amazon Web Services'],
    ['34.1.208.1', 'Google'],
    ['2a00:1450:4001:800::200e', 'Google'],
    ['13.64.0.1', 'Microsoft'],
  ])('a cloud provider’s published range is hosting, named: %s (%s)', (ip, provider) => {
    const reason = `The address is in a known hosting or cloud range (${provider}).`;
    expect(look(ip)).toMatchObject({ traffic_type: 'hosting', vpn_provider: null, reason });
  });

  it('a published crawler is hosting (never a business visitor), named by the more specific list inside its cloud', () => {
    expect(look('66.249.66.1')).toMatchObject({ traffic_type: 'hosting', reason: 'The address is a published crawler address (Googlebot).' });
    expect(look('40.77.167.1')).toMatchObject({ traffic_type: 'hosting', reason: 'The address is a published crawler address (Bingbot).' });
  });

  it('a datacenter the network owner did not reveal is hosting, free, instead of a paid lookup', () => {
    // Tencent Cloud: its organisation name matches no rule.
    expect(ownersOnly('1.12.0.1').traffic_type).toBeNull();
    expect(look('1.12.0.1')).toMatchObject({ traffic_type: 'hosting', asn: 45090, reason: 'The address is in a known hosting or datacenter range.' });
  });

  it('leaves ISP, education, government and enterprise networks as the owner data has them', () => {
    for (const ip of ['80.128.0.1', '2003::1', '193.60.0.1', '198.116.0.1', '17.253.144.10', '140.82.112.3', '81.2.69.142']) {
      const a = look(ip);
      const b = ownersOnly(ip);
      expect({ traffic_type: a.traffic_type, reason: a.reason }, ip).toEqual({ traffic_type: b.traffic_type, reason: b.reason });
    }
  });

  it('imported rows override the shipped lists and extend them', () => {
    const cidr = (text: string) => {
      const c = parseCidr(text);
      if (c?.version !== 4) throw new Error(text);
      return { start: c.start, end: c.end };
    };
    const layered = LocalIpData.fromBase(base, {
      overlays4: [
        // The operator knows better than the AWS list, and than X4BNet's VPN list.
        { ...cidr('3.5.140.0/24'), kind: 'isp', provider: 'Office ISP' },
        { ...cidr('2.56.252.0/24'), kind: 'hosting', provider: null },
        { ...cidr('5.253.204.162/32'), kind: 'vpn', provider: 'Renamed VPN' },
        // A range no shipped list has.
        { ...cidr('81.2.69.0/24'), kind: 'vpn', provider: 'Extra VPN' },
      ],
      // An operator's company record inside a shipped hosting range.
      companies4: [{ ...cidr('13.64.0.0/24'), domain: 'acme.example', company_name: 'Acme', confidence: 0.9, source: 'import' }],
    });
    const at = (ip: string) => layered.lookup(parseIp(ip) as NonNullable<ReturnType<typeof parseIp>>);
    expect(at('3.5.140.1')).toMatchObject({ traffic_type: 'isp', reason: 'The address is in a known consumer ISP range (Office ISP).' });
    expect(at('2.56.252.1').traffic_type).toBe('hosting');
    expect(at('5.253.204.162')).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'Renamed VPN' });
    expect(at('81.2.69.142')).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'Extra VPN' });
    expect(at('13.64.0.1')).toMatchObject({ traffic_type: 'business', company: { domain: 'acme.example' } });
    // Outside the imported rows the shipped lists still answer.
    expect(at('3.5.141.1').reason).toBe('The address is in a known hosting or cloud range (Amazon Web Services).');
    for (const ip of ['3.5.140.1', '2.56.252.1', '5.253.204.162', '81.2.69.142', '13.64.0.1', '3.5.141.1']) {
      expect(typeOf(layered, ip), ip).toBe(at(ip).traffic_type);
    }
  });
});

describe('interval indexes', () => {
  it('resolve overlapping ranges to the most specific, ties to the higher priority', () => {
    const idx = Ipv4Index.build([
      { start: 0, end: 1000, value: 1 },
      { start: 100, end: 199, value: 2 },
      { start: 150, end: 159, value: 3 },
      { start: 150, end: 159, value: 4, priority: 5 },
      { start: 900, end: 1100, value: 5 },
    ]);
    expect([0, 99, 100, 149, 150, 159, 160, 199, 200, 899, 900, 1000, 1100, 1101].map((ip) => idx.lookup(ip))).toEqual([
      1, 1, 2, 2, 4, 4, 2, 2, 1, 1, 5, 5, 5, -1,
    ]);
  });

  it('agree with a brute-force scan on random overlapping ranges across the whole IPv4 space', () => {
    const rnd = xorshift32(12345);
    const ranges = Array.from({ length: 400 }, (_, i) => {
      const start = rnd();
      const len = [1, 255, 65_535, 1 << 20, 1 << 26][i % 5] as number;
      return { start, end: Math.min(0xffffffff, start + (rnd() % len)), value: i, priority: i % 3 };
    });
    const idx = Ipv4Index.build(ranges);
    const brute = (ip: number) => {
      let best: (typeof ranges)[number] | undefined;
      for (const r of ranges) {
        if (r.start > ip || r.end < ip) continue;
        const size = r.end - r.start;
        const bsize = best ? best.end - best.start : Infinity;
        if (!best || size < bsize || (size === bsize && (r.priority > best.priority || (r.priority === best.priority && r.value > best.value))))
          best = r;
      }
      return best ? best.value : -1;
    };
    const probes = [...ranges.flatMap((r) => [r.start, r.end, r.end + 1, r.start - 1]), ...Array.from({ length: 2000 }, rnd)].filter(
      (ip) => ip >= 0 && ip <= 0xffffffff,
    );
    for (const ip of probes) expect(idx.lookup(ip)).toBe(brute(ip));
  });

  it('work for IPv6 across the 64-bit halves', () => {
    const a = parseCidr('2001:db8::/32');
    const b = parseCidr('2001:db8:1::/48');
    if (a?.version !== 6 || b?.version !== 6) throw new Error('parse');
    const idx = Ipv6Index.build([
      { start: a.start, end: a.end, value: 1 },
      { start: b.start, end: b.end, value: 2 },
    ]);
    const at = (ip: string) => {
      const p = parseIp(ip);
      return p?.version === 6 ? idx.lookup(p.groups.reduce((v, g) => (v << 16n) | BigInt(g), 0n)) : -2;
    };
    expect([at('2001:db8::1'), at('2001:db8:1::ffff'), at('2001:db8:2::'), at('2001:db9::')]).toEqual([1, 2, 1, -1]);
  });

  it('fill IPv6 from 32-bit words exactly as from bigints, clipping overlaps and the top of the space', () => {
    const words = (v: bigint) => Uint32Array.from([96n, 64n, 32n, 0n], (sh) => Number((v >> sh) & 0xffffffffn));
    const TOP = (1n << 128n) - 1n;
    const rows: [bigint, bigint, number][] = [
      [0n, 0xffffn, 1],
      [0x1_0000n, (1n << 64n) - 1n, 2],
      [(1n << 64n) - 5n, (1n << 64n) + 5n, 3], // overlaps row 2: clipped to start at 2^64
      [(1n << 64n) + 2n, (1n << 64n) + 4n, 4], // inside row 3: nothing left
      [(1n << 96n) + (0xfffffffen << 32n), TOP - 1n, 5],
      [TOP - 1n, TOP, 6], // clipped to TOP alone
    ];
    const byBig = Ipv6Index.sortedBuilder(rows.length);
    const byWords = Ipv6Index.sortedBuilder(rows.length);
    for (const [s, e, v] of rows) {
      byBig.push(s, e, v);
      byWords.pushWords(words(s), words(e), v);
    }
    // What the clipping rule leaves, built through the plain bigint setter.
    const expected = Ipv6Index.fromSegments([
      { start: 0n, end: 0xffffn, value: 1 },
      { start: 0x1_0000n, end: (1n << 64n) - 1n, value: 2 },
      { start: 1n << 64n, end: (1n << 64n) + 5n, value: 3 },
      { start: (1n << 96n) + (0xfffffffen << 32n), end: TOP - 1n, value: 5 },
      { start: TOP, end: TOP, value: 6 },
    ]);
    const probes = rows.flatMap(([s, e]) => [s, e, s - 1n, e + 1n, (s + e) / 2n]).filter((p) => p >= 0n && p <= TOP);
    for (const built of [byBig.done(), byWords.done()]) {
      expect(built.size).toBe(expected.size);
      for (const p of probes) expect(built.lookup(p), p.toString(16)).toBe(expected.lookup(p));
    }
  });

  it('load every shipped row so that its first and last address resolve to its ASN', async () => {
    const dir = path.dirname(createRequire(import.meta.url).resolve('@ip-location-db/asn/package.json'));
    for (const [file, v6] of [
      ['asn-ipv4-num.csv', false],
      ['asn-ipv6-num.csv', true],
    ] as const) {
      const lines = (await readFile(path.join(dir, file), 'utf8')).split('\n').filter(Boolean);
      let checked = 0;
      for (let i = 0; i < lines.length; i += 211) {
        const [start, end, asn] = (lines[i] as string).split(',');
        // The table has one overlap; a clipped row's start belongs to its predecessor.
        const prevEnd = i > 0 ? (lines[i - 1] as string).split(',')[1] : undefined;
        if (prevEnd !== undefined && BigInt(prevEnd) >= BigInt(start as string)) continue;
        for (const at of [start, end] as string[]) {
          const ip = v6 ? parseIp(bigToV6(BigInt(at))) : parseIp(dotted(Number(at)));
          expect(data.lookup(ip as NonNullable<ReturnType<typeof parseIp>>).asn, `${file} row ${i}`).toBe(Number(asn));
        }
        checked++;
      }
      expect(checked).toBeGreaterThan(v6 ? 400 : 1500);
    }
  });

  it('parse IPv4 on the hot path strictly, agreeing with a reference on random strings', () => {
    expect(ipv4ToNumber('255.255.255.255')).toBe(0xffffffff);
    expect(ipv4ToNumber('0.0.0.0')).toBe(0);
    for (const bad of [
      '1.2.3',
      '01.2.3.4',
      '256.0.0.0',
      '1.2.3.4.',
      '1..2.3',
      'a.b.c.d',
      '1.2.3.4 ',
      '1.2.3.04',
      '1.2.3.1000',
      '1.2.3.-1',
      '1.2.3.+1',
      '١.2.3.4',
      '1.2.3:4',
      '.1.2.3',
      '',
    ])
      expect(ipv4ToNumber(bad), bad).toBe(-1);
    const reference = (s: string) => {
      const m = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/.exec(s);
      if (!m) return -1;
      const o = m.slice(1).map(Number);
      return o.some((n) => n > 255) ? -1 : (((o[0] as number) << 24) | ((o[1] as number) << 16) | ((o[2] as number) << 8) | (o[3] as number)) >>> 0;
    };
    const alphabet = '0123456789....0123456789 /:a-';
    const rnd = xorshift32(99);
    for (let i = 0; i < 50_000; i++) {
      const x = rnd();
      let s = '';
      const len = 5 + (x % 12);
      for (let k = 0; k < len; k++) s += alphabet[(x + k * 7919 + ((x >>> (k % 24)) & 31)) % alphabet.length];
      expect(ipv4ToNumber(s), s).toBe(reference(s));
    }
    for (let i = 0; i < 20_000; i++) {
      const x = rnd();
      const ip = dotted(x);
      expect(ipv4ToNumber(ip), ip).toBe(x);
    }
    expect(parseCidr('10.1.2.3/8')).toEqual({ version: 4, start: 0x0a000000, end: 0x0affffff });
    expect(parseCidr('10.0.0.0/33')).toBeNull();
  });
});

describe('feed importers', () => {
  it('read the shipped X4BNet VPN and datacenter lists, counting what they keep', async () => {
    const vpn = parseCidrList(await readFile(new URL('x4bnet-lists_vpn/output/vpn/ipv4.txt', SHIPPED), 'utf8'));
    expect(vpn.read).toBeGreaterThan(10_000);
    expect(vpn.kept + vpn.rejected).toBe(vpn.read);
    expect(vpn.kept / vpn.read).toBeGreaterThan(0.99);
    const dc6 = parseCidrList(await readFile(new URL('x4bnet-lists_vpn/output/datacenter/ipv6.txt', SHIPPED), 'utf8'));
    expect(dc6.kept).toBeGreaterThan(8000);
  });

  it('read the shipped merged cloud lists', async () => {
    const aws = parseCidrList(await readFile(new URL('ipranges/amazon/ipv4_merged.txt', SHIPPED), 'utf8'), 'Amazon Web Services');
    expect(aws.kept).toBeGreaterThan(100);
    expect(aws.rows[0]?.provider).toBe('Amazon Web Services');
  });

  it('reject malformed lines with samples and skip comments', () => {
    const r = parseCidrList('# comment\n10.0.0.0/8\n\nnot-a-cidr\n300.1.1.1/24\n2001:db8::/32 # inline\n');
    expect(r).toMatchObject({ read: 4, kept: 2, rejected: 2, rejectedSamples: ['not-a-cidr', '300.1.1.1/24'] });
  });

  it('read the four cloud providers’ published formats', () => {
    const aws = parseCloudRanges(
      'aws',
      JSON.stringify({ prefixes: [{ ip_prefix: '3.5.140.0/22', service: 'AMAZON' }], ipv6_prefixes: [{ ipv6_prefix: '2600:1f18::/36' }] }),
    );
    const gcp = parseCloudRanges(
      'gcp',
      JSON.stringify({ prefixes: [{ ipv4Prefix: '34.1.208.0/20', scope: 'africa-south1' }, { ipv6Prefix: '2600:1900:8000::/44' }] }),
    );
    const azure = parseCloudRanges(
      'azure',
      JSON.stringify({ values: [{ name: 'AzureCloud', properties: { addressPrefixes: ['13.64.0.0/16', '2603:1000::/40'] } }] }),
    );
    const oracle = parseCloudRanges(
      'oracle',
      JSON.stringify({ regions: [{ region: 'uk-london-1', cidrs: [{ cidr: '132.145.0.0/16', tags: ['OCI'] }, { cidr: 'bogus' }] }] }),
    );
    expect([aws.kept, gcp.kept, azure.kept, oracle.kept, oracle.rejected]).toEqual([2, 2, 2, 1, 1]);
    expect(azure.rows[0]).toEqual({ cidr: '13.64.0.0/16', provider: 'Microsoft Azure' });
    expect(parseCloudRanges('aws', '{not json').rejected).toBe(1);
  });

  it('read IP/CIDR → company CSV with quoting, optional confidence and a header', () => {
    const r = parseCompanyCsv(
      'ip_or_cidr,domain,company_name,confidence\n81.2.69.142,https://www.Acme.example/,"Acme, Ltd",0.8\n81.2.70.0/24,widgets.example,Widgets\nbad,x,y\n81.2.71.1,acme.example,Acme,2\n',
    );
    expect(r.read).toBe(4);
    expect(r.rows).toEqual([
      { cidr: '81.2.69.142', domain: 'acme.example', company_name: 'Acme, Ltd', confidence: 0.8 },
      { cidr: '81.2.70.0/24', domain: 'widgets.example', company_name: 'Widgets', confidence: 0.9 },
    ]);
    expect(r.rejected).toBe(2);
  });
});

describe('recent results (this process)', () => {
  it('serve an entry until its own expiry, and evict the least recently used past the bound', async () => {
    const { createRecentResults } = await import('@sightline/core');
    let now = 0;
    const cache = createRecentResults<string>(2, () => now);
    cache.set('a', '1', 10_000);
    cache.set('b', '2', 10_000);
    expect(cache.get('a')).toBe('1'); // a is now the most recently used
    cache.set('c', '3', 5_000);
    expect(cache.get('b')).toBeUndefined();
    expect([cache.get('a'), cache.get('c'), cache.size]).toEqual(['1', '3', 2]);
    now = 5_000;
    expect(cache.get('c')).toBeUndefined();
    expect(cache.get('a')).toBe('1');
    cache.set('d', '4', 5_000); // already expired: not kept
    expect([cache.get('d'), cache.size]).toEqual([undefined, 1]);
  });
});
