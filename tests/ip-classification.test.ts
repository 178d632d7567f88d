import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  classifyNetwork,
  ipv4ToNumber,
  Ipv4Index,
  Ipv6Index,
  LocalIpData,
  parseCidr,
  parseCidrList,
  parseCloudRanges,
  parseCompanyCsv,
  parseIp,
} from '@sightline/core';
import { openCountryReader, readAsnBase } from '@sightline/host';

const SHARED = new URL('../../shared/data/', import.meta.url);

let data: LocalIpData;
let country: Awaited<ReturnType<typeof openCountryReader>>;
beforeAll(async () => {
  data = LocalIpData.fromBase(await readAsnBase());
  country = await openCountryReader();
});

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

  it('the hot-path classifier agrees with the full lookup on 20,000 addresses', () => {
    let x = 777;
    for (let i = 0; i < 20_000; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      const v = x >>> 0;
      const ip = `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
      expect(data.trafficTypeV4(ipv4ToNumber(ip))).toBe(look(ip).traffic_type);
    }
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
    let x = 12345;
    const rnd = () => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return x >>> 0;
    };
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
        if (!best || size < bsize || (size === bsize && (r.priority > best.priority || (r.priority === best.priority && r.value > best.value)))) best = r;
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

  it('parse IPv4 on the hot path strictly', () => {
    expect(ipv4ToNumber('255.255.255.255')).toBe(0xffffffff);
    for (const bad of ['1.2.3', '01.2.3.4', '256.0.0.0', '1.2.3.4.', '1..2.3', 'a.b.c.d', '1.2.3.4 ']) expect(ipv4ToNumber(bad)).toBe(-1);
    expect(parseCidr('10.1.2.3/8')).toEqual({ version: 4, start: 0x0a000000, end: 0x0affffff });
    expect(parseCidr('10.0.0.0/33')).toBeNull();
  });
});

describe('feed importers', () => {
  it('read the X4BNet VPN and datacenter lists from shared data, counting what they keep', async () => {
    const vpn = parseCidrList(await readFile(new URL('x4bnet-lists_vpn/output/vpn/ipv4.txt', SHARED), 'utf8'));
    expect(vpn.read).toBeGreaterThan(10_000);
    expect(vpn.kept + vpn.rejected).toBe(vpn.read);
    expect(vpn.kept / vpn.read).toBeGreaterThan(0.99);
    const dc6 = parseCidrList(await readFile(new URL('x4bnet-lists_vpn/output/datacenter/ipv6.txt', SHARED), 'utf8'));
    expect(dc6.kept).toBeGreaterThan(8000);
  });

  it('read the merged cloud lists from shared data', async () => {
    const aws = parseCidrList(await readFile(new URL('ipranges/amazon/ipv4_merged.txt', SHARED), 'utf8'), 'Amazon Web Services');
    expect(aws.kept).toBeGreaterThan(100);
    expect(aws.rows[0]?.provider).toBe('Amazon Web Services');
  });

  it('reject malformed lines with samples and skip comments', () => {
    const r = parseCidrList('# comment\n10.0.0.0/8\n\nnot-a-cidr\n300.1.1.1/24\n2001:db8::/32 # inline\n');
    expect(r).toMatchObject({ read: 4, kept: 2, rejected: 2, rejectedSamples: ['not-a-cidr', '300.1.1.1/24'] });
  });

  it('read the four cloud providers’ published formats', () => {
    const aws = parseCloudRanges('aws', JSON.stringify({ prefixes: [{ ip_prefix: '3.5.140.0/22', service: 'AMAZON' }], ipv6_prefixes: [{ ipv6_prefix: '2600:1f18::/36' }] }));
    const gcp = parseCloudRanges('gcp', JSON.stringify({ prefixes: [{ ipv4Prefix: '34.1.208.0/20', scope: 'africa-south1' }, { ipv6Prefix: '2600:1900:8000::/44' }] }));
    const azure = parseCloudRanges('azure', JSON.stringify({ values: [{ name: 'AzureCloud', properties: { addressPrefixes: ['13.64.0.0/16', '2603:1000::/40'] } }] }));
    const oracle = parseCloudRanges('oracle', JSON.stringify({ regions: [{ region: 'uk-london-1', cidrs: [{ cidr: '132.145.0.0/16', tags: ['OCI'] }, { cidr: 'bogus' }] }] }));
    expect([aws.kept, gcp.kept, azure.kept, oracle.kept, oracle.rejected]).toEqual([2, 2, 2, 1, 1]);
    expect(azure.rows[0]).toEqual({ cidr: '13.64.0.0/16', provider: 'Microsoft Azure' });
    expect(parseCloudRanges('aws', '{not json').rejected).toBe(1);
  });

  it('read IP/CIDR → company CSV with quoting, optional confidence and a header', () => {
    const r = parseCompanyCsv('ip_or_cidr,domain,company_name,confidence\n81.2.69.142,https://www.Acme.example/,"Acme, Ltd",0.8\n81.2.70.0/24,widgets.example,Widgets\nbad,x,y\n81.2.71.1,acme.example,Acme,2\n');
    expect(r.read).toBe(4);
    expect(r.rows).toEqual([
      { cidr: '81.2.69.142', domain: 'acme.example', company_name: 'Acme, Ltd', confidence: 0.8 },
      { cidr: '81.2.70.0/24', domain: 'widgets.example', company_name: 'Widgets', confidence: 0.9 },
    ]);
    expect(r.rejected).toBe(2);
  });
});

describe('in-process hot cache', () => {
  it('honours TTLs and evicts the oldest entry past its bound', async () => {
    const { createMemoryHotCache } = await import('@sightline/core');
    let now = 0;
    const cache = createMemoryHotCache(2, () => now);
    await cache.set('a', '1', 10);
    await cache.set('b', '2', 10);
    await cache.set('c', '3', 10);
    expect(await cache.get('a')).toBeNull();
    expect(await cache.get('b')).toBe('2');
    now = 10_001;
    expect(await cache.get('c')).toBeNull();
  });
});
