import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  classifyReverseName,
  createReverseDnsSource,
  type DnsResolver,
  lookupAddress,
  MAX_PTR_NAMES,
  parseDnsServers,
  RDNS_ANSWER_TTL_MS,
  RDNS_FAILURE_TTL_MS,
  rdnsDomainList,
  readReverseDnsOptions,
  reverseLookupName,
  SHIPPED_RDNS_DOMAINS,
} from '@sightline/core/ip/reverse-dns/index';
import { getDomain } from 'tldts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import shippedDomains from '../packages/core/data/rdns-domains.json' with { type: 'json' };
import { createNodeDnsResolver } from '../packages/host/src/dns-resolver.ts';
import { DENO } from './support/deno-functions.ts';
import { type DnsZone, startDnsServer } from './support/dns-server.ts';
import { REPO_ROOT } from './support/process.ts';

type Server = Awaited<ReturnType<typeof startDnsServer>>;

/** The zone every lookup test reads: companies, a spoof, ISPs' and a host's naming, IPv6. */
const ZONE: DnsZone = {
  ptr: {
    '198.51.100.7': ['gw1.acme-widgets.com.'],
    '198.51.100.8': ['www.acme.com.'],
    '198.51.100.9': ['vpn.widgets-ltd.co.uk.'],
    '198.51.100.10': ['gone.acme-widgets.com.'],
    '73.1.2.3': ['c-73-1-2-3.hsd1.nj.comcast.net.'],
    '1.2.3.4': ['1-2-3-4.dyn.example-isp.net.'],
    '3.80.1.2': ['ec2-3-80-1-2.compute-1.amazonaws.com.'],
    '2001:db8:0:1::10': ['gw6.acme-widgets.com.'],
    '192.0.2.50': Array.from({ length: 10 }, (_, i) => `host${i}.many-names.example.`),
    '192.0.2.51': ['not a host name', 'ok.acme-widgets.com.'],
  },
  a: {
    'gw1.acme-widgets.com': ['198.51.100.7'],
    // The spoof: the PTR of .8 says www.acme.com, but acme.com's owner points it elsewhere.
    'www.acme.com': ['203.0.113.9'],
    'vpn.widgets-ltd.co.uk': ['198.51.100.9'],
    'c-73-1-2-3.hsd1.nj.comcast.net': ['73.1.2.3'],
    '1-2-3-4.dyn.example-isp.net': ['1.2.3.4'],
    'ec2-3-80-1-2.compute-1.amazonaws.com': ['3.80.1.2'],
    'ok.acme-widgets.com': ['192.0.2.51'],
    ...Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`host${i}.many-names.example`, ['203.0.113.1']])),
  },
  aaaa: {
    // Written differently from the address looked up: compared as addresses, not as text.
    'gw6.acme-widgets.com': ['2001:0db8:0000:0001:0000:0000:0000:0010'],
  },
};

function sourceOver(server: Server, options: { timeoutMs?: number; now?: () => number } = {}) {
  const timeoutMs = options.timeoutMs ?? 1000;
  const resolver = createNodeDnsResolver({ servers: expectServers(server.server), timeoutMs });
  return createReverseDnsSource({ resolver, timeoutMs, ...(options.now ? { now: options.now } : {}) });
}

function expectServers(text: string) {
  const servers = parseDnsServers(text);
  if (!Array.isArray(servers)) throw new Error(servers.refused);
  return servers;
}

describe('forward-confirmed reverse DNS against a real DNS server', () => {
  let dns: Server;
  beforeAll(async () => {
    dns = await startDnsServer(ZONE);
  });
  afterAll(() => dns.close());

  it('a PTR name that resolves back to the address names its registrable domain as a business', async () => {
    const answer = await sourceOver(dns).lookup('198.51.100.7');
    expect(answer).toEqual({
      provider: 'rdns',
      traffic_type: 'business',
      domain: 'acme-widgets.com',
      company_name: null,
      confidence: 0.6,
      country_code: null,
      reason: 'PTR gw1.acme-widgets.com confirmed',
    });
  });

  it('the domain is public-suffix aware (widgets-ltd.co.uk, not co.uk)', async () => {
    expect((await sourceOver(dns).lookup('198.51.100.9'))?.domain).toBe('widgets-ltd.co.uk');
  });

  it('a spoofed PTR (its name resolves to another address) votes for nothing', async () => {
    const before = dns.queries.length;
    expect(await sourceOver(dns).lookup('198.51.100.8')).toBeNull();
    // It was asked both ways: the PTR, then the name forward, which pointed elsewhere.
    expect(dns.queries.slice(before)).toEqual([
      { name: '8.100.51.198.in-addr.arpa', type: 'PTR' },
      { name: 'www.acme.com', type: 'A' },
    ]);
  });

  it('a PTR whose name does not resolve, and an address without a PTR, vote for nothing', async () => {
    const source = sourceOver(dns);
    expect(await source.lookup('198.51.100.10')).toBeNull();
    expect(await source.lookup('198.51.100.99')).toBeNull();
  });

  it("an ISP's dynamic PTR is isp with no company, on a listed domain and on an unlisted one", async () => {
    const source = sourceOver(dns);
    expect(await source.lookup('73.1.2.3')).toMatchObject({
      traffic_type: 'isp',
      domain: null,
      company_name: null,
      reason: "PTR c-73-1-2-3.hsd1.nj.comcast.net confirmed: comcast.net is an ISP's naming",
    });
    expect(await source.lookup('1.2.3.4')).toMatchObject({
      traffic_type: 'isp',
      domain: null,
      company_name: null,
      reason: "PTR 1-2-3-4.dyn.example-isp.net confirmed: an ISP's generated naming (the address in the name)",
    });
  });

  it("a cloud host's PTR (amazonaws.com) is hosting with no company", async () => {
    expect(await sourceOver(dns).lookup('3.80.1.2')).toMatchObject({ traffic_type: 'hosting', domain: null, company_name: null });
  });

  it('IPv6: the PTR under ip6.arpa is confirmed by AAAA, compared as addresses', async () => {
    const before = dns.queries.length;
    expect(await sourceOver(dns).lookup('2001:DB8:0:1::0:10')).toMatchObject({ traffic_type: 'business', domain: 'acme-widgets.com' });
    expect(dns.queries.slice(before).map((q) => q.type)).toEqual(['PTR', 'AAAA']);
    expect(dns.queries[before]?.name).toBe(reverseLookupName({ version: 6, groups: [0x2001, 0xdb8, 0, 1, 0, 0, 0, 0x10] }));
  });

  it('an IPv4-mapped IPv6 address is looked up as its IPv4 address', async () => {
    expect((await sourceOver(dns).lookup('::ffff:198.51.100.7'))?.domain).toBe('acme-widgets.com');
  });

  it(`a zone listing many PTR names costs at most ${MAX_PTR_NAMES} forward queries, and names that are not host names are skipped`, async () => {
    const source = sourceOver(dns);
    const before = dns.queries.length;
    expect(await source.lookup('192.0.2.50')).toBeNull();
    expect(dns.queries.slice(before).filter((q) => q.type === 'A')).toHaveLength(MAX_PTR_NAMES);
    expect((await source.lookup('192.0.2.51'))?.domain).toBe('acme-widgets.com');
  });

  it('a cache hit makes no query, and concurrent lookups of one address share one', async () => {
    const source = sourceOver(dns);
    const before = dns.queries.length;
    const answers = await Promise.all(Array.from({ length: 5 }, () => source.lookup('198.51.100.7')));
    expect(answers.every((a) => a?.domain === 'acme-widgets.com')).toBe(true);
    expect(dns.queries.length - before).toBe(2); // one PTR, one A
    expect((await source.lookup('198.51.100.7'))?.domain).toBe('acme-widgets.com');
    expect(await source.lookup('198.51.100.8')).toBeNull();
    expect(await source.lookup('198.51.100.8')).toBeNull();
    expect(dns.queries.length - before).toBe(4); // the spoof's two, once: its null answer is cached too
  });

  it('answers are kept for hours and asked again once expired', async () => {
    let clock = 1_000_000;
    const source = sourceOver(dns, { now: () => clock });
    const before = dns.queries.length;
    await source.lookup('198.51.100.9');
    clock += RDNS_ANSWER_TTL_MS - 1;
    await source.lookup('198.51.100.9');
    expect(dns.queries.length - before).toBe(2);
    clock += 2;
    expect((await source.lookup('198.51.100.9'))?.domain).toBe('widgets-ltd.co.uk');
    expect(dns.queries.length - before).toBe(4);
  });
});

describe('a resolver that fails', () => {
  it('one that never answers: the lookup answers null within its timeout, and the failure is cached for a shorter time', async () => {
    const dns = await startDnsServer(ZONE, 'silent');
    try {
      let clock = 5_000_000;
      const source = sourceOver(dns, { timeoutMs: 250, now: () => clock });
      const started = performance.now();
      expect(await source.lookup('198.51.100.7')).toBeNull();
      // Bounded by the timeout (with room for a loaded machine), not by c-ares's defaults of seconds.
      expect(performance.now() - started).toBeLessThan(250 + 750);
      expect(dns.queries.length).toBeGreaterThanOrEqual(1);

      const asked = dns.queries.length;
      expect(await source.lookup('198.51.100.7')).toBeNull();
      expect(dns.queries.length).toBe(asked);
      dns.setMode('answer');
      clock += RDNS_FAILURE_TTL_MS + 1;
      expect((await source.lookup('198.51.100.7'))?.domain).toBe('acme-widgets.com');
    } finally {
      await dns.close();
    }
  });

  it('a caller that stops waiting gets null at once, and the query still fills the cache', async () => {
    const dns = await startDnsServer(ZONE);
    try {
      const source = sourceOver(dns);
      const gaveUp = new AbortController();
      gaveUp.abort();
      expect(await source.lookup('198.51.100.7', gaveUp.signal)).toBeNull();
      await expect.poll(() => source.lookup('198.51.100.7')).toMatchObject({ domain: 'acme-widgets.com' });
      // The abandoned lookup's PTR and A queries, and nothing more: the next caller joined or read them.
      expect(dns.queries.map((q) => q.type)).toEqual(['PTR', 'A']);
    } finally {
      await dns.close();
    }
  });

  it('the Node resolver: NXDOMAIN is an empty answer, SERVFAIL a failure', async () => {
    const dns = await startDnsServer(ZONE);
    try {
      const resolver = createNodeDnsResolver({ servers: expectServers(dns.server), timeoutMs: 1000 });
      const signal = new AbortController().signal;
      expect(await resolver.resolve('nothing.acme-widgets.com', 'A', signal)).toEqual([]);
      expect(await resolver.reverse('198.51.100.99', signal)).toEqual([]);
      expect(await resolver.reverse('198.51.100.7', signal)).toEqual(['gw1.acme-widgets.com']);
      dns.setMode('servfail');
      await expect(resolver.resolve('gw1.acme-widgets.com', 'A', signal)).rejects.toMatchObject({ code: 'ESERVFAIL' });
    } finally {
      await dns.close();
    }
  });

  it('a resolver that ignores its signal is abandoned at the deadline', async () => {
    const hanging: DnsResolver = { reverse: () => new Promise(() => {}), resolve: () => new Promise(() => {}) };
    const source = createReverseDnsSource({ resolver: hanging, timeoutMs: 100 });
    const started = performance.now();
    expect(await source.lookup('198.51.100.7')).toBeNull();
    expect(performance.now() - started).toBeLessThan(100 + 900);
  });
});

describe('the Deno resolver (supabase/functions/_shared/dns-resolver.ts) against the same server', () => {
  /** Runs `body` under Deno with `resolver` (over DNS_SERVERS=`servers`) and `source` in scope; its last line is JSON. */
  async function underDeno(servers: string, body: string): Promise<unknown> {
    const script = `
      import { createDenoDnsResolver } from './supabase/functions/_shared/dns-resolver.ts';
      import { createReverseDnsSource, parseDnsServers } from '@sightline/core/ip/reverse-dns';
      const servers = parseDnsServers(${JSON.stringify(servers)});
      if (!Array.isArray(servers)) throw new Error(servers.refused);
      const resolver = createDenoDnsResolver(servers);
      const source = createReverseDnsSource({ resolver, timeoutMs: 300 });
      ${body}`;
    const { stdout } = await promisify(execFile)(DENO, ['eval', '--config', 'deno.json', script], {
      cwd: REPO_ROOT,
      timeout: 90_000,
      env: { ...process.env, NO_COLOR: '1' },
    });
    return JSON.parse(stdout.trim().split('\n').at(-1) ?? 'null');
  }

  it('confirms IPv4 and IPv6 names, refuses a spoof, answers NXDOMAIN as nothing, and stops at the deadline', async () => {
    const dns = await startDnsServer(ZONE);
    const silent = await startDnsServer(ZONE, 'silent');
    try {
      const answers = await underDeno(
        dns.server,
        `const signal = new AbortController().signal;
         console.log(JSON.stringify({
           v4: await source.lookup('198.51.100.7'),
           v6: await source.lookup('2001:db8:0:1::10'),
           spoof: await source.lookup('198.51.100.8'),
           isp: (await source.lookup('73.1.2.3'))?.traffic_type,
           nothing: await resolver.resolve('nothing.acme-widgets.com', 'A', signal),
         }));`,
      );
      expect(answers).toEqual({
        v4: expect.objectContaining({ traffic_type: 'business', domain: 'acme-widgets.com', reason: 'PTR gw1.acme-widgets.com confirmed' }),
        v6: expect.objectContaining({ traffic_type: 'business', domain: 'acme-widgets.com', reason: 'PTR gw6.acme-widgets.com confirmed' }),
        spoof: null,
        isp: 'isp',
        nothing: [],
      });

      const timed = await underDeno(
        silent.server,
        `const started = performance.now();
         const answer = await source.lookup('198.51.100.7');
         console.log(JSON.stringify({ answer, ms: performance.now() - started }));`,
      );
      expect(timed).toMatchObject({ answer: null });
      expect((timed as { ms: number }).ms).toBeLessThan(300 + 700);
      expect(silent.queries.length).toBeGreaterThan(0);
    } finally {
      await Promise.all([dns.close(), silent.close()]);
    }
  }, 180_000);
});

describe('what a confirmed name says (classification)', () => {
  const classify = (name: string, ip: string) => {
    const address = lookupAddress(ip);
    if (!address) throw new Error(ip);
    return classifyReverseName(name, address);
  };

  it.each([
    ['p5b0c1d2e.dip0.t-ipconnect.de', '91.12.29.46', 'listed: Deutsche Telekom'],
    ['p5b0c1d2e.dip.example-telco.de', '91.12.29.46', 'the address in hex'],
    ['customer-091012029046.example-telco.de', '91.12.29.46', 'zero-padded octets'],
    ['46.29.12.91.example-telco.de', '91.12.29.46', 'reversed octets'],
    ['ns1.ip-51-75-1.eu', '51.75.1.20', "the first three octets (OVHcloud's per-/24 domains)"],
    ['host7.dyn.example-telco.net', '198.51.100.7', 'the label dyn'],
    ['adsl-pool12.example-telco.net', '198.51.100.7', 'a word of a label'],
    ['ip-12ab.example-telco.net', '198.51.100.7', 'the label ip-<digits>'],
    ['2001-db8--10.v6.example-telco.net', '2001:db8::10', 'an IPv6 address with dashes'],
  ])('%s for %s is isp: %s', (name, ip) => {
    expect(classify(name, ip)).toMatchObject({ traffic_type: 'isp', domain: null, company_name: null });
  });

  it.each([
    ['ip-abc.example-telco.net', 'ip- not followed by a number'],
    ['gw-73-1-2.widgets.example', 'octets of another address'],
    ['mail.acme-widgets.com', 'a company host name'],
  ])('%s for 198.51.100.7 is a business (%s)', (name) => {
    expect(classify(name, '198.51.100.7')?.traffic_type).toBe('business');
  });

  it("the registrable domain's own words are not read as an ISP's (gw.dynamic-widgets.com is a company)", () => {
    expect(classify('gw.dynamic-widgets.com', '198.51.100.7')).toMatchObject({ traffic_type: 'business', domain: 'dynamic-widgets.com' });
  });

  it('mobile carriers are isp, CDNs hosting; a listed domain is matched below its registrable domain too', () => {
    expect(classify('mobile-166-1-2-3.mycingular.net', '198.51.100.7')?.traffic_type).toBe('isp');
    expect(classify('server-1-2-3-4.fra50.r.cloudfront.net', '198.51.100.7')?.traffic_type).toBe('hosting');
    const list = rdnsDomainList({
      ...shippedDomains,
      domains: { 'hosting.example.com': { type: 'hosting', source: 'a test entry under a company domain' } },
    });
    const address = lookupAddress('198.51.100.7');
    if (!address) throw new Error('address');
    expect(classifyReverseName('vm1.hosting.example.com', address, list)?.traffic_type).toBe('hosting');
    expect(classifyReverseName('www.example.com', address, list)?.traffic_type).toBe('business');
  });

  it('education and government suffixes classify the traffic, naming the institution', () => {
    expect(classify('gw.mit.edu', '198.51.100.7')).toMatchObject({ traffic_type: 'education', domain: 'mit.edu' });
    expect(classify('vpn.ox.ac.uk', '198.51.100.7')).toMatchObject({ traffic_type: 'education', domain: 'ox.ac.uk' });
    expect(classify('proxy.defra.gov.uk', '198.51.100.7')).toMatchObject({ traffic_type: 'government', domain: 'defra.gov.uk' });
    expect(classify('gw.interieur.gouv.fr', '198.51.100.7')).toMatchObject({ traffic_type: 'government' });
    // Ascension Island's TLD is not an academic suffix.
    expect(classify('gw.widgets.ac', '198.51.100.7')).toMatchObject({ traffic_type: 'business', domain: 'widgets.ac' });
  });

  it('a name without a registrable domain votes for nothing', () => {
    expect(classify('1.2.3.4', '1.2.3.4')).toBeNull();
    expect(classify('co.uk', '198.51.100.7')).toBeNull();
  });
});

describe('the shipped rDNS domain list', () => {
  it('every entry is a registrable domain with a type and a source note', () => {
    expect(SHIPPED_RDNS_DOMAINS.domains.size).toBeGreaterThan(50);
    for (const [domain, entry] of SHIPPED_RDNS_DOMAINS.domains) {
      expect(getDomain(domain), domain).toBe(domain);
      expect(['isp', 'mobile', 'hosting', 'cdn']).toContain(entry.type);
      expect(entry.source.length, domain).toBeGreaterThan(5);
    }
  });

  it('the big networks named in issue 29 are on it', () => {
    for (const domain of ['comcast.net', 'verizon.net', 't-ipconnect.de', 'amazonaws.com', 'googleusercontent.com', 'bbtec.net', 'proxad.net']) {
      expect(SHIPPED_RDNS_DOMAINS.domains.has(domain), domain).toBe(true);
    }
  });

  it('an entry of an unknown type, or without a note, is refused when the list is built', () => {
    const institution_suffixes = shippedDomains.institution_suffixes;
    expect(() => rdnsDomainList({ institution_suffixes, domains: { 'x.net': { type: 'carrier', source: 'x' } } })).toThrow(
      /x.net has type "carrier"/,
    );
    expect(() => rdnsDomainList({ institution_suffixes, domains: { 'x.net': { type: 'isp' } } })).toThrow(/x.net has no source note/);
  });
});

describe('configuration: RDNS, DNS_SERVERS, RDNS_TIMEOUT_MS', () => {
  it('DNS_SERVERS takes IPv4 and bracketed IPv6 servers, with or without a port; unset means the system resolvers', () => {
    expect(parseDnsServers('9.9.9.9, 1.1.1.1:5353,[2620:FE::FE],[2001:db8::53]:53')).toEqual([
      { address: '9.9.9.9', family: 4, port: 53 },
      { address: '1.1.1.1', family: 4, port: 5353 },
      { address: '2620:fe::fe', family: 6, port: 53 },
      { address: '2001:db8::53', family: 6, port: 53 },
    ]);
    expect(parseDnsServers(undefined)).toEqual([]);
    expect(parseDnsServers(' ')).toEqual([]);
    expect(readReverseDnsOptions({})).toEqual({ enabled: true, servers: [], timeoutMs: 1000 });
    expect(readReverseDnsOptions({ RDNS: '0', RDNS_TIMEOUT_MS: '400' })).toMatchObject({ enabled: false, timeoutMs: 400 });
  });

  it.each([
    ['dns.google', /DNS_SERVERS entry "dns.google" is not an IP address/],
    ['2620:fe::fe', /DNS_SERVERS entry "2620:fe::fe" looks like an IPv6 address: write it in brackets/],
    ['9.9.9.9:0', /DNS_SERVERS entry "9.9.9.9:0" has a port that is not a number from 1 to 65535/],
    ['9.9.9.9:70000', /has a port that is not a number from 1 to 65535/],
    ['[2620:fe::fe', /opens a bracket it does not close/],
    ['[9.9.9.9]:53', /is not an IPv6 address in brackets/],
    ['9.9.9.9,,1.1.1.1', /DNS_SERVERS has an empty entry/],
  ])('DNS_SERVERS=%s is refused with a message that says what to fix', (value, message) => {
    expect(() => readReverseDnsOptions({ DNS_SERVERS: value })).toThrow(message);
  });

  it('RDNS_TIMEOUT_MS is at most one second', () => {
    expect(() => readReverseDnsOptions({ RDNS_TIMEOUT_MS: '1500' })).toThrow(/RDNS_TIMEOUT_MS/);
    expect(() => createReverseDnsSource({ resolver: { reverse: async () => [], resolve: async () => [] }, timeoutMs: 5000 })).toThrow(RangeError);
  });
});
