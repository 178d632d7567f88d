import {
  type AsnBase,
  type CompanyRow,
  classifyNetwork,
  countryTableFromMmdb,
  Ipv4Index,
  Ipv6Index,
  type LocalAnswer,
  type LocalFacts,
  LocalIpData,
  type LocalLayers,
  type OverlayRow,
  type ParsedIp,
  parseCidr,
  parseIp,
} from '@sightline/core';
import { openCountryReader, readAsnBase } from '@sightline/host';
import { beforeAll, describe, expect, it } from 'vitest';
import { dotted, xorshift32 } from './support/addresses.ts';

/**
 * The cache-miss lookup of ip-to-company and the tracker identifications (`LocalIpData.facts`): one
 * search of a table that merges the network owners, the shipped range lists and the IPv4 countries.
 * It must answer exactly what the waterfall answered before that table existed: an interval search
 * per index (owners, shipped lists, imported ranges, company records), the owner's class, and the
 * country from the `maxmind` reader on the shipped country database. That earlier lookup is written
 * out again below, from the same base data, as the reference.
 */
let base: AsnBase;
let data: LocalIpData;
let reader: Awaited<ReturnType<typeof openCountryReader>>;
const countryOf = (ip: string) => reader.get(ip)?.country_code ?? null;
beforeAll(async () => {
  base = await readAsnBase();
  data = LocalIpData.fromBase(base);
  reader = await openCountryReader();
}, 60_000);

const hex6 = (v: bigint) => Array.from({ length: 8 }, (_, k) => ((v >> BigInt(112 - 16 * k)) & 0xffffn).toString(16)).join(':');

type Layers = Omit<LocalLayers, 'asn4' | 'asn6'>;
const KIND_PRIORITY = { vpn: 3, hosting: 2, isp: 1 } as const;

/** The lookup as it was written before the merged table, over the base's own indexes. */
function referenceFor(layers: Layers = {}) {
  const ranges = base.ranges;
  if (!ranges) throw new Error('the shipped range lists did not load');
  const overlayRows = [...(layers.overlays4 ?? []), ...(layers.overlays6 ?? [])] as OverlayRow<number | bigint>[];
  const companyRows = [...(layers.companies4 ?? []), ...(layers.companies6 ?? [])] as CompanyRow<number | bigint>[];
  const n4 = layers.overlays4?.length ?? 0;
  const c4 = layers.companies4?.length ?? 0;
  const overlay4 = Ipv4Index.build(
    (layers.overlays4 ?? []).map((r, i) => ({ start: r.start, end: r.end, value: i, priority: KIND_PRIORITY[r.kind] })),
  );
  const overlay6 = Ipv6Index.build(
    (layers.overlays6 ?? []).map((r, i) => ({ start: r.start, end: r.end, value: n4 + i, priority: KIND_PRIORITY[r.kind] })),
  );
  const company4 = Ipv4Index.build(
    (layers.companies4 ?? []).map((r, i) => ({ start: r.start, end: r.end, value: i, priority: r.source === 'import' ? 2 : 1 })),
  );
  const company6 = Ipv6Index.build(
    (layers.companies6 ?? []).map((r, i) => ({ start: r.start, end: r.end, value: c4 + i, priority: r.source === 'import' ? 2 : 1 })),
  );
  const article = (t: string) => (/^[aeiou]/.test(t) ? 'an' : 'a');
  // Classifying runs the name rules: once per owner, not once per probe.
  const owners = new Map<number, { asn: number; name: string } & ReturnType<typeof classifyNetwork>>();
  const ownerAt = (i: number) => {
    let owner = owners.get(i);
    if (!owner) {
      const asn = base.owners.asns[i] as number;
      const name = base.owners.names[i] as string;
      owner = { asn, name, ...classifyNetwork(asn, name) };
      owners.set(i, owner);
    }
    return owner;
  };

  return (ip: ParsedIp): LocalAnswer => {
    const v6 = ip.version === 6;
    const key = v6 ? ip.groups.reduce((v, g) => (v << 16n) | BigInt(g), 0n) : ip.value;
    const ownerIdx = v6 ? base.asn6.lookup(key as bigint) : base.asn4.lookup(key as number);
    const owner = ownerIdx >= 0 ? ownerAt(ownerIdx) : null;
    const at = { asn: owner?.asn ?? null, org: owner?.name ?? null };
    const oIdx = v6 ? overlay6.lookup(key as bigint) : overlay4.lookup(key as number);
    const overlay = oIdx >= 0 ? overlayRows[oIdx] : undefined;
    if (overlay && overlay.kind !== 'isp') {
      const who = overlay.provider ? ` (${overlay.provider})` : '';
      return {
        ...at,
        traffic_type: overlay.kind,
        vpn_provider: overlay.kind === 'vpn' ? (overlay.provider ?? owner?.vpnProvider ?? owner?.name ?? null) : null,
        company: null,
        reason: overlay.kind === 'vpn' ? `The address is a known VPN exit${who}.` : `The address is in a known hosting or cloud range${who}.`,
      };
    }
    const cIdx = v6 ? company6.lookup(key as bigint) : company4.lookup(key as number);
    const company = cIdx >= 0 ? companyRows[cIdx] : undefined;
    if (company) {
      return {
        ...at,
        traffic_type: 'business',
        vpn_provider: null,
        company: { domain: company.domain, company_name: company.company_name, confidence: company.confidence, source: company.source },
        reason:
          company.source === 'learned'
            ? `A confirmed earlier identification places ${company.company_name} at this address.`
            : `The address is registered to ${company.company_name} in the imported company data.`,
      };
    }
    if (overlay) {
      const who = overlay.provider ? ` (${overlay.provider})` : '';
      return { ...at, traffic_type: 'isp', vpn_provider: null, company: null, reason: `The address is in a known consumer ISP range${who}.` };
    }
    const sIdx = v6 ? ranges.v6.lookup(key as bigint) : ranges.v4.lookup(key as number);
    const list = sIdx >= 0 ? ranges.lists[sIdx] : undefined;
    if (list && (list.kind === 'vpn' || owner?.type !== 'vpn')) {
      const provider = list.kind === 'vpn' ? (list.provider ?? owner?.vpnProvider ?? owner?.name ?? null) : list.provider;
      return {
        ...at,
        traffic_type: list.kind,
        vpn_provider: list.kind === 'vpn' ? provider : null,
        company: null,
        reason: `The address ${list.reason}${provider ? ` (${provider})` : ''}.`,
      };
    }
    if (!owner) return { ...at, traffic_type: null, vpn_provider: null, company: null, reason: 'No network owner is known for this address.' };
    const name = owner.label ?? owner.name;
    const as = `AS${owner.asn}`;
    switch (owner.type) {
      case 'vpn':
        return {
          ...at,
          traffic_type: 'vpn',
          vpn_provider: owner.vpnProvider ?? owner.name,
          company: null,
          reason: `The network belongs to ${name}, a VPN provider (${as}).`,
        };
      case 'hosting':
        return {
          ...at,
          traffic_type: 'hosting',
          vpn_provider: null,
          company: null,
          reason: `The network belongs to ${name}, a hosting or cloud provider (${as}).`,
        };
      case 'isp':
        return {
          ...at,
          traffic_type: 'isp',
          vpn_provider: null,
          company: null,
          reason: `The network belongs to ${name}, an internet service provider (${as}); it does not identify a company.`,
        };
      case 'education':
      case 'government':
        return {
          ...at,
          traffic_type: owner.type,
          vpn_provider: null,
          company: null,
          reason: `The network belongs to ${name}, ${article(owner.type)} ${owner.type} network (${as}).`,
        };
      case 'business':
        if (owner.domain && owner.companyName) {
          return {
            ...at,
            traffic_type: 'business',
            vpn_provider: null,
            company: { domain: owner.domain, company_name: owner.companyName, confidence: 0.95, source: 'asn' },
            reason: `The network is ${owner.companyName}'s own (${as}).`,
          };
        }
        break;
      default:
        break;
    }
    return { ...at, traffic_type: null, vpn_provider: null, company: null, reason: `The network belongs to ${owner.name} (${as}).` };
  };
}

/**
 * Where `facts` and the reference (with the reader's country) differ, as readable lines; [] when
 * they agree everywhere. Collected rather than asserted one by one: a million expects take minutes.
 */
function disagreements(subject: LocalIpData, reference: (ip: ParsedIp) => LocalAnswer, addresses: Iterable<string>): string[] {
  const out: string[] = [];
  let checked = 0;
  for (const ip of addresses) {
    checked++;
    const parsed = parseIp(ip);
    if (!parsed) throw new Error(`not an address: ${ip}`);
    const got = subject.facts(ip, countryOf);
    const want = { ...reference(parsed), country_code: countryOf(ip), owner_vote: undefined };
    if (!got) out.push(`${ip}: no answer`);
    else if (!sameFacts(got, want) && out.length < 20) out.push(`${ip}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`);
  }
  expect(checked).toBeGreaterThan(0);
  return out;
}

/** Field by field (toEqual on a million answers takes minutes); the company's fields in a fixed order. */
function sameFacts(a: LocalFacts, b: LocalFacts): boolean {
  const company = (c: LocalFacts['company']) => (c ? [c.domain, c.company_name, c.confidence, c.source].join('|') : null);
  return (
    Object.keys(a).length === 8 &&
    a.owner_vote === b.owner_vote &&
    a.traffic_type === b.traffic_type &&
    a.asn === b.asn &&
    a.org === b.org &&
    a.vpn_provider === b.vpn_provider &&
    company(a.company) === company(b.company) &&
    a.reason === b.reason &&
    a.country_code === b.country_code
  );
}

/** The first and last address of every range of an index (every `step`-th), and their neighbours. */
function* edges(index: Ipv4Index, step = 1): Generator<string> {
  for (let i = 0; i < index.boundaryCount; i += step) {
    const b = index.boundaryAt(i);
    for (const v of [b - 1, b]) if (v >= 0 && v <= 0xffffffff) yield dotted(v);
  }
}

function* randomV4(n: number, seed: number): Generator<string> {
  const rnd = xorshift32(seed);
  for (let i = 0; i < n; i++) yield dotted(rnd());
}

describe('the one-table IPv4 lookup answers what the interval searches and the maxmind reader answered', () => {
  it('on 100,000 random addresses, owner, class, reason and country alike', () => {
    expect(disagreements(data, referenceFor(), randomV4(100_000, 0x2545f491))).toEqual([]);
  }, 120_000);

  it('at every edge of the owner table, the shipped range lists and the country table', () => {
    const country = base.country;
    if (!base.ranges || !country) throw new Error('the shipped data did not load whole');
    expect(country.v4.size).toBeGreaterThan(100_000);
    const reference = referenceFor();
    // Every seventh edge of the two big tables (an odd step: starts and ends alike), every list edge.
    expect(disagreements(data, reference, edges(base.asn4, 7))).toEqual([]);
    expect(disagreements(data, reference, edges(base.ranges.v4))).toEqual([]);
    expect(disagreements(data, reference, edges(country.v4, 7))).toEqual([]);
    expect(disagreements(data, reference, ['0.0.0.0', '255.255.255.255', '8.8.8.8', '17.253.144.10', '185.65.134.1'])).toEqual([]);
  }, 120_000);

  it('with imported ranges and company records on top, at their edges and around them', () => {
    const cidr = (text: string) => {
      const c = parseCidr(text);
      if (c?.version !== 4) throw new Error(text);
      return { start: c.start, end: c.end };
    };
    const cidr6 = (text: string) => {
      const c = parseCidr(text);
      if (c?.version !== 6) throw new Error(text);
      return { start: c.start, end: c.end };
    };
    const layers: Layers = {
      overlays4: [
        { ...cidr('8.8.8.16/29'), kind: 'vpn', provider: 'Edge VPN' },
        { ...cidr('80.128.0.0/20'), kind: 'hosting', provider: null },
        { ...cidr('193.60.1.128/32'), kind: 'isp', provider: null },
        { ...cidr('3.5.140.0/24'), kind: 'isp', provider: 'Office ISP' },
        { ...cidr('5.253.204.162/32'), kind: 'vpn', provider: null },
        { ...cidr('185.65.134.0/25'), kind: 'hosting', provider: 'Rack' },
      ],
      overlays6: [{ ...cidr6('2003::/32'), kind: 'vpn', provider: null }],
      companies4: [
        { ...cidr('3.5.140.77/32'), domain: 'edge.example', company_name: 'Edge', confidence: 0.9, source: 'import' },
        { ...cidr('13.64.0.0/24'), domain: 'acme.example', company_name: 'Acme', confidence: 0.9, source: 'learned' },
        { ...cidr('81.2.69.0/28'), domain: 'aa.example', company_name: 'AA', confidence: 0.8, source: 'import' },
      ],
      companies6: [{ ...cidr6('2001:630::/48'), domain: 'uni.example', company_name: 'Uni', confidence: 0.9, source: 'import' }],
    };
    // Built the way the store reloads after an import: over data that has answered already, so
    // the answers it kept per combination of shipped facts are shared with the new copy.
    const warmed = LocalIpData.fromBase(base);
    for (const ip of randomV4(50_000, 77)) warmed.facts(ip, countryOf);
    for (const row of [...(layers.overlays4 ?? []), ...(layers.companies4 ?? [])]) warmed.facts(dotted(row.start), countryOf);
    const layered = warmed.withLayers(layers);
    const probes: string[] = [];
    for (const row of [...(layers.overlays4 ?? []), ...(layers.companies4 ?? [])]) {
      for (let d = -3; d <= 3; d++) for (const v of [row.start + d, row.end + d]) if (v >= 0 && v <= 0xffffffff) probes.push(dotted(v));
    }
    probes.push('2003::1', '2003:1::1', '2001:630::1', '2001:630:1::1');
    const reference = referenceFor(layers);
    expect(disagreements(layered, reference, probes)).toEqual([]);
    expect(disagreements(layered, reference, randomV4(50_000, 77))).toEqual([]);
    // And the layers really answer: an imported VPN over a hosting list, a company inside a cloud.
    expect(layered.facts('8.8.8.20', countryOf)).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'Edge VPN', country_code: 'US' });
    expect(layered.facts('3.5.140.77', countryOf)).toMatchObject({ traffic_type: 'business', company: { domain: 'edge.example' } });
    expect(layered.facts('3.5.140.1', countryOf)).toMatchObject({ traffic_type: 'isp' });
    // And the data it was made from still answers without them.
    expect(disagreements(warmed, referenceFor(), probes)).toEqual([]);
  }, 60_000);

  it('shares one frozen answer between the addresses of one combination of shipped facts', () => {
    const a = data.facts('8.8.8.8', countryOf);
    const b = data.facts('8.8.8.9', countryOf);
    expect(a).toBe(b);
    expect(Object.isFrozen(a)).toBe(true);
    expect(a).toMatchObject({ traffic_type: 'hosting', asn: 15169, country_code: 'US' });
  });
});

describe('IPv6 keeps the general path', () => {
  it('answers as the reference, the country from the reader, inside and at the edges of owned ranges', () => {
    const six = base.asn6.arrays();
    const rnd = xorshift32(0x6a09e667);
    const probes: string[] = ['2a00:1450:4001:800::200e', '2003::1', '2001:630::1', '2600:1f18::1', '2a02:26f7:b3c0:4000::1', '::ffff:8.8.8.8'];
    for (let i = 0; i < 3000; i++) {
      const k = rnd() % six.values.length;
      const start = ((six.startHi[k] as bigint) << 64n) | (six.startLo[k] as bigint);
      const end = ((six.endHi[k] as bigint) << 64n) | (six.endLo[k] as bigint);
      for (const v of [start - 1n, start, end, end + 1n, start + (end - start) / 2n]) if (v >= 0n && v < 1n << 128n) probes.push(hex6(v));
    }
    expect(disagreements(data, referenceFor(), probes)).toEqual([]);
    expect(data.facts('2003::1', countryOf)).toMatchObject({ traffic_type: 'isp', asn: 3320, country_code: 'DE' });
  });

  it('refuses what is not an address', () => {
    expect(data.facts('not an address', countryOf)).toBeNull();
    expect(data.facts('01.2.3.4', countryOf)).toBeNull();
  });
});

describe('without a country table (a base from the edge snapshot), IPv4 asks the reader', () => {
  it('and answers the same', () => {
    const { country: _dropped, ...withoutCountry } = base;
    const plain = LocalIpData.fromBase(withoutCountry);
    let asked = 0;
    const counting = (ip: string) => {
      asked++;
      return countryOf(ip);
    };
    for (const ip of randomV4(2000, 5)) {
      expect(plain.facts(ip, counting), ip).toEqual(data.facts(ip, countryOf));
    }
    expect(asked).toBe(2000);
    // With the table, IPv4 never asks it.
    asked = 0;
    for (const ip of randomV4(2000, 5)) data.facts(ip, counting);
    expect(asked).toBe(0);
  });
});

describe('the country table read out of an MMDB search tree', () => {
  /** A tree of `recordSize`-bit records from [left, right] pairs, most significant byte first. */
  function tree(recordSize: 24 | 28 | 32, nodes: [number, number][]): Uint8Array {
    const bytes = new Uint8Array(nodes.length * (recordSize / 4));
    nodes.forEach(([l, r], i) => {
      const at = i * (recordSize / 4);
      if (recordSize === 24) bytes.set([l >>> 16, (l >>> 8) & 255, l & 255, r >>> 16, (r >>> 8) & 255, r & 255], at);
      else if (recordSize === 28) {
        bytes.set([(l >>> 16) & 255, (l >>> 8) & 255, l & 255, ((l >>> 24) << 4) | (r >>> 24), (r >>> 16) & 255, (r >>> 8) & 255, r & 255], at);
      } else bytes.set([l >>> 24, (l >>> 16) & 255, (l >>> 8) & 255, l & 255, r >>> 24, (r >>> 16) & 255, (r >>> 8) & 255, r & 255], at);
    });
    return bytes;
  }

  it.each([24, 28, 32] as const)('holds, range by range, what the reader answers (%i-bit records)', (recordSize) => {
    // Three nodes: 0.0.0.0/1 → node 1, 128.0.0.0/1 → node 2; node 1 splits 0/2 (data A) and
    // 64/2 (no data); node 2 splits 128/2 (data B) and 192/2 (data A again). Record values past
    // the node count point at data; large ones test the high bits of 28- and 32-bit records.
    const nodeCount = 3;
    const A = recordSize === 24 ? 0x00_10_00_00 : 0x0a_bc_de_f0;
    const B = A + 16;
    const bytes = tree(recordSize, [
      [1, 2],
      [A, nodeCount],
      [B, A],
    ]);
    const asked: string[] = [];
    const table = countryTableFromMmdb({ bytes, nodeCount, recordSize, ipVersion: 4 }, (address) => {
      asked.push(address);
      return address.startsWith('128.') ? 'BB' : 'AA';
    });
    // One question per distinct record, at the first address that ends on it.
    expect(asked).toEqual(['0.0.0.0', '128.0.0.0']);
    const at = (ip: string) => {
      const parsed = parseIp(ip);
      if (parsed?.version !== 4) throw new Error(ip);
      const i = table.v4.lookup(parsed.value);
      return i < 0 ? null : table.codes[i];
    };
    expect(
      ['0.0.0.0', '63.255.255.255', '64.0.0.0', '127.255.255.255', '128.0.0.0', '191.255.255.255', '192.0.0.0', '255.255.255.255'].map(at),
    ).toEqual(['AA', 'AA', null, null, 'BB', 'BB', 'AA', 'AA']);
  });

  it('starts an IPv6 tree’s IPv4 part ninety-six left turns below the root, as a reader does', () => {
    // 96 nodes of left turns, then one node splitting the IPv4 space in two.
    const nodeCount = 98;
    const nodes: [number, number][] = Array.from({ length: 96 }, (_, i) => [i + 1, nodeCount] as [number, number]);
    nodes.push([nodeCount + 16, nodeCount + 32], [nodeCount, nodeCount]);
    const table = countryTableFromMmdb({ bytes: tree(24, nodes), nodeCount, recordSize: 24, ipVersion: 6 }, (address) =>
      address === '0.0.0.0' ? 'LO' : 'HI',
    );
    expect(table.codes).toEqual(['LO', 'HI']);
    expect([table.v4.lookup(0), table.v4.lookup(0x7fffffff), table.v4.lookup(0x80000000), table.v4.lookup(0xffffffff)]).toEqual([0, 0, 1, 1]);
  });

  it('leaves no country where the record has none', () => {
    const nodeCount = 1;
    const table = countryTableFromMmdb({ bytes: tree(24, [[nodeCount + 16, nodeCount + 32]]), nodeCount, recordSize: 24, ipVersion: 4 }, (address) =>
      address === '0.0.0.0' ? null : 'ZZ',
    );
    expect([table.v4.lookup(1), table.v4.lookup(0x80000001)]).toEqual([-1, 0]);
  });
});
