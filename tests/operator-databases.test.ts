import { copyFile, mkdtemp, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError, type TrafficType } from '@sightline/core';
import { consensus } from '@sightline/core/ip/consensus';
import {
  answerFromDatabases,
  CONNECTION_TRAFFIC,
  detectDatabaseKind,
  OPERATOR_DATABASE_CONFIDENCE,
  type OperatorDatabaseOptions,
  readDatabaseRecord,
  registrableDomain,
} from '@sightline/core/ip/operator-databases/index';
import type { SourceAnswer } from '@sightline/core/ip/types';
import { Reader } from 'maxmind';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type OperatorDatabases, openOperatorDatabases, parseIpDatabasesSetting } from '../packages/host/src/operator-databases.ts';
import { capturingLogger } from './support/log.ts';
import { rejection } from './support/rejection.ts';
import { until } from './support/wait.ts';

/*
 * The operator's own databases (IP_DATABASES) read from MaxMind's test databases and IPinfo's Lite
 * sample (tests/fixtures, with their licences and provenance). Every expected value is read from the
 * data the database was made from (MaxMind's source JSON, IPinfo's CSV), never typed in by hand.
 */

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const MAXMIND = {
  enterprise: 'GeoIP2-Enterprise-Test',
  isp: 'GeoIP2-ISP-Test',
  domain: 'GeoIP2-Domain-Test',
  connection: 'GeoIP2-Connection-Type-Test',
  anonymous: 'GeoIP2-Anonymous-IP-Test',
  asn: 'GeoLite2-ASN-Test',
} as const;
type MaxmindFile = (typeof MAXMIND)[keyof typeof MAXMIND];
const mmdb = (name: MaxmindFile) => path.join(FIXTURES, 'maxmind', `${name}.mmdb`);
const IPINFO_LITE = path.join(FIXTURES, 'ipinfo-lite', 'ipinfo_lite_sample.mmdb');

type JsonRecord = Record<string, unknown>;
const sourceCache = new Map<string, Map<string, JsonRecord>>();

/** MaxMind's source JSON for a test database: network → record. */
async function sourceOf(name: MaxmindFile): Promise<Map<string, JsonRecord>> {
  let map = sourceCache.get(name);
  if (!map) {
    const entries = JSON.parse(await readFile(path.join(FIXTURES, 'maxmind', 'source-data', `${name}.json`), 'utf8')) as Array<
      Record<string, JsonRecord>
    >;
    map = new Map(entries.flatMap((e) => Object.entries(e)));
    sourceCache.set(name, map);
  }
  return map;
}

async function source(name: MaxmindFile, network: string): Promise<JsonRecord> {
  const record = (await sourceOf(name)).get(network);
  if (!record) throw new Error(`${network} is not in ${name}.json`);
  return record;
}

/** A network of the source JSON as an address to ask and its prefix as the reader reports it. */
function firstAddress(network: string): { ip: string; prefix: number } {
  const [addr = '', bits = ''] = network.split('/');
  // "::1.2.0.0/112" is IPv4 1.2.0.0/16 in the IPv6 tree; the reader counts IPv4 prefixes from the IPv4 subtree.
  if (addr.startsWith('::') && addr.includes('.')) return { ip: addr.slice(2), prefix: Number(bits) - 96 };
  return { ip: addr, prefix: Number(bits) };
}

/** IPinfo's CSV: network → row. */
async function ipinfoRows(): Promise<Map<string, Record<string, string>>> {
  const text = await readFile(path.join(FIXTURES, 'ipinfo-lite', 'ipinfo_lite_sample.csv'), 'utf8');
  const [header = '', ...lines] = text.trim().split('\n');
  const columns = header.split(',');
  const rows = new Map<string, Record<string, string>>();
  for (const line of lines) {
    const cells = [...line.matchAll(/("([^"]*)"|[^,]*)(,|$)/g)].map((m) => m[2] ?? m[1] ?? '').slice(0, columns.length);
    const row = Object.fromEntries(columns.map((c, i) => [c, cells[i] ?? '']));
    rows.set(row.network ?? '', row);
  }
  return rows;
}

const opened: OperatorDatabases[] = [];
async function open(paths: string[], opts: OperatorDatabaseOptions & { reloadIntervalMs?: number } = {}) {
  const { log, lines } = capturingLogger();
  const dbs = await openOperatorDatabases({ paths, log, reloadIntervalMs: 0, ...opts });
  opened.push(dbs);
  return { dbs, lines };
}
afterEach(() => {
  for (const dbs of opened.splice(0)) dbs.close();
});

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'sightline-ip-databases-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const only = (answers: SourceAnswer[]): SourceAnswer => {
  expect(answers).toHaveLength(1);
  const [a] = answers;
  if (!a) throw new Error('no answer');
  return a;
};

describe('a database is known by the type in its metadata', () => {
  it('each test database opens as its product, whatever the file is called', async () => {
    const renamed = path.join(tmp, 'operator-chose-this-name.mmdb');
    await copyFile(mmdb(MAXMIND.connection), renamed);
    const { dbs } = await open([...Object.values(MAXMIND).map(mmdb), IPINFO_LITE, renamed]);
    expect(dbs.files().map((f) => f.product)).toEqual([
      'GeoIP2-Enterprise',
      'GeoIP2-ISP',
      'GeoIP2-Domain',
      'GeoIP2-Connection-Type',
      'GeoIP2-Anonymous-IP',
      'GeoLite2-ASN',
      'IPinfo Lite',
      'GeoIP2-Connection-Type',
    ]);
  });

  it('IP_DATABASES is a comma-separated list of paths, blanks ignored, each named once', () => {
    expect(parseIpDatabasesSetting(' /data/a.mmdb, ,/data/b.mmdb,/data/a.mmdb ')).toEqual(['/data/a.mmdb', '/data/b.mmdb']);
    expect(parseIpDatabasesSetting(undefined)).toEqual([]);
    expect(parseIpDatabasesSetting('relative.mmdb')).toEqual([path.resolve('relative.mmdb')]);
  });

  it('no databases named: nothing answers and nothing is watched', async () => {
    const { dbs } = await open([]);
    expect(dbs.lookUp('1.2.0.1')).toEqual({ answers: [], network: { asn: null, as_organisation: null, as_domain: null } });
  });
});

describe('every record of a test database reads as its source JSON says', () => {
  // Each network's first address, asked of the real file, against the record it was made from (networks
  // a more specific one covers at that address are skipped: the reader answers the inner one there).
  async function eachNetwork(name: MaxmindFile, check: (record: JsonRecord, got: unknown, kind: string) => void): Promise<number> {
    const reader = new Reader<JsonRecord>(await readFile(mmdb(name)));
    let checked = 0;
    for (const [network, record] of await sourceOf(name)) {
      const { ip, prefix } = firstAddress(network);
      const [got, gotPrefix] = reader.getWithPrefixLength(ip);
      if (gotPrefix !== prefix) continue;
      check(record, got, reader.metadata.databaseType);
      checked += 1;
    }
    return checked;
  }

  it('GeoIP2-ISP: isp, organization, AS number and organisation, mobile country code', async () => {
    const n = await eachNetwork(MAXMIND.isp, (record, got) => {
      const facts = readDatabaseRecord('geoip2-isp', got);
      expect(facts.isp).toBe(record.isp ?? null);
      expect(facts.organisation).toBe(record.organization ?? null);
      expect(facts.asn).toBe(record.autonomous_system_number ?? null);
      expect(facts.asOrganisation).toBe(record.autonomous_system_organization ?? null);
      expect(facts.mobileCountryCode).toBe(record.mobile_country_code ?? null);
    });
    expect(n).toBeGreaterThan(2000);
  });

  it('GeoLite2-ASN: AS number and organisation', async () => {
    const n = await eachNetwork(MAXMIND.asn, (record, got) => {
      const facts = readDatabaseRecord('geolite2-asn', got);
      expect(facts.asn).toBe(record.autonomous_system_number ?? null);
      expect(facts.asOrganisation).toBe(record.autonomous_system_organization ?? null);
    });
    expect(n).toBeGreaterThan(100);
  });

  it('GeoIP2-Domain: the registrable domain, lower case; a public suffix (in-addr.arpa) is no domain', async () => {
    const n = await eachNetwork(MAXMIND.domain, (record, got) => {
      const expected = String(record.domain).toLowerCase();
      expect(readDatabaseRecord('geoip2-domain', got).domain).toBe(expected === 'in-addr.arpa' ? null : expected);
    });
    expect(n).toBeGreaterThan(50);
    expect(registrableDomain('in-addr.arpa')).toBeNull();
  });

  it('GeoIP2-Connection-Type: every documented connection type maps to a traffic type', async () => {
    const n = await eachNetwork(MAXMIND.connection, (record, got) => {
      const facts = readDatabaseRecord('geoip2-connection-type', got);
      expect(facts.connectionType).toBe(record.connection_type);
      expect(Object.hasOwn(CONNECTION_TRAFFIC, String(record.connection_type))).toBe(true);
    });
    expect(n).toBe((await sourceOf(MAXMIND.connection)).size);
  });

  it('GeoIP2-Enterprise: traits and country', async () => {
    const n = await eachNetwork(MAXMIND.enterprise, (record, got) => {
      const facts = readDatabaseRecord('geoip2-enterprise', got);
      const traits = (record.traits ?? {}) as JsonRecord;
      expect(facts.userType).toBe(traits.user_type ?? null);
      expect(facts.organisation).toBe(traits.organization ?? null);
      expect(facts.isp).toBe(traits.isp ?? null);
      expect(facts.connectionType).toBe(traits.connection_type ?? null);
      const country = (record.country as JsonRecord | undefined)?.iso_code ?? (record.registered_country as JsonRecord | undefined)?.iso_code ?? null;
      expect(facts.country).toBe(country);
    });
    expect(n).toBeGreaterThan(25);
  });
});

describe('GeoIP2-Enterprise alone: user_type classifies, organisation names', () => {
  let dbs: OperatorDatabases;
  beforeAll(async () => {
    dbs = await openOperatorDatabases({ paths: [mmdb(MAXMIND.enterprise)], log: capturingLogger().log, reloadIntervalMs: 0 });
  });
  afterAll(() => dbs.close());

  const cases: Array<[network: string, traffic: TrafficType]> = [
    ['214.214.214.216/32', 'isp'], // traveler
    ['::6.1.0.0/121', 'isp'], // residential
    ['::1.124.213.0/120', 'isp'], // cellular
    ['214.78.0.0/23', 'government'], // military
    ['::216.160.83.56/125', 'government'], // government
    ['214.214.214.220/32', 'hosting'], // hosting
    ['214.214.214.221/32', 'hosting'], // content_delivery_network
    ['::67.43.156.0/120', 'hosting'], // search_engine_spider
    ['214.214.214.218/32', 'business'], // business
  ];
  it.each(cases)('%s: its user_type gives %s', async (network, traffic) => {
    const record = await source(MAXMIND.enterprise, network);
    const traits = record.traits as JsonRecord;
    const a = only(dbs.lookUp(firstAddress(network).ip).answers);
    expect(a).toMatchObject({ provider: 'maxmind', traffic_type: traffic, confidence: OPERATOR_DATABASE_CONFIDENCE.userType });
    expect(a.reason).toContain(`user_type ${String(traits.user_type)}`);
    expect(a.country_code).toBe(((record.country ?? record.registered_country) as JsonRecord | undefined)?.iso_code ?? null);
  });

  it('a military network names nobody as a company, and the reason says whose it is', async () => {
    const traits = (await source(MAXMIND.enterprise, '214.78.0.0/23')).traits as JsonRecord;
    const a = only(dbs.lookUp('214.78.0.1').answers);
    expect(a).toMatchObject({ traffic_type: 'government', company_name: null, domain: null, country_code: 'US' });
    expect(a.reason).toContain(String(traits.organization));
  });

  it('business traffic whose organisation is its own carrier names no company (an academic network is not a customer)', async () => {
    const traits = (await source(MAXMIND.enterprise, '::2.20.32.110/127')).traits as JsonRecord;
    expect(traits.user_type).toBe('business');
    expect(traits.organization).toBe(traits.isp);
    const a = only(dbs.lookUp('2.20.32.110').answers);
    expect(a).toMatchObject({ traffic_type: 'business', company_name: null, domain: null });
  });

  it('…unless the ownership source says that network is a business: then the carrier is the company', async () => {
    const traits = (await source(MAXMIND.enterprise, '::2.20.32.110/127')).traits as JsonRecord;
    const asked: Array<{ asn: number | null; name: string | null }> = [];
    const { dbs: withOwner } = await open([mmdb(MAXMIND.enterprise)], {
      ownerTraffic: (owner) => {
        asked.push(owner);
        return 'business';
      },
    });
    const a = only(withOwner.lookUp('2.20.32.110').answers);
    expect(a).toMatchObject({ traffic_type: 'business', company_name: traits.organization });
    expect(asked).toContainEqual({ asn: traits.autonomous_system_number, name: traits.isp });
  });
});

describe('the single-purpose MaxMind databases', () => {
  it('GeoIP2-Anonymous-IP: VPN, Tor, public and residential proxies are vpn; a hosting provider alone is hosting', async () => {
    const { dbs } = await open([mmdb(MAXMIND.anonymous)]);
    for (const [network, record] of await sourceOf(MAXMIND.anonymous)) {
      const a = only(dbs.lookUp(firstAddress(network).ip).answers);
      const vpnish = ['is_anonymous_vpn', 'is_tor_exit_node', 'is_public_proxy', 'is_residential_proxy'].some((f) => record[f] === true);
      expect([network, a.traffic_type]).toEqual([network, vpnish ? 'vpn' : 'hosting']);
      expect(a).toMatchObject({ company_name: null, domain: null, confidence: OPERATOR_DATABASE_CONFIDENCE.anonymizer });
    }
    expect(only(dbs.lookUp('abcd:1000::1').answers).reason).toContain('public proxy');
  });

  it('GeoIP2-Connection-Type: Cellular, Cable/DSL and Satellite are isp; Corporate is business with nobody named', async () => {
    const { dbs } = await open([mmdb(MAXMIND.connection)]);
    for (const [network, record] of await sourceOf(MAXMIND.connection)) {
      const a = only(dbs.lookUp(firstAddress(network).ip).answers);
      expect([network, a.traffic_type]).toEqual([network, record.connection_type === 'Corporate' ? 'business' : 'isp']);
      expect(a.company_name).toBeNull();
    }
  });

  it('GeoIP2-ISP: a mobile country code is a mobile network', async () => {
    const record = await source(MAXMIND.isp, '::149.101.100.0/124');
    const { dbs } = await open([mmdb(MAXMIND.isp)]);
    const a = only(dbs.lookUp('149.101.100.1').answers);
    expect(a).toMatchObject({ traffic_type: 'isp', company_name: null, confidence: OPERATOR_DATABASE_CONFIDENCE.mobile });
    expect(a.reason).toContain(`MCC ${String(record.mobile_country_code)}`);
  });

  it('GeoIP2-ISP: an organisation distinct from its carrier is named, unclassified, at a hint’s confidence', async () => {
    const record = await source(MAXMIND.isp, '::24.38.243.141/128');
    const { dbs } = await open([mmdb(MAXMIND.isp)]);
    const a = only(dbs.lookUp('24.38.243.141').answers);
    expect(a).toMatchObject({
      company_name: record.organization,
      traffic_type: null,
      domain: null,
      confidence: OPERATOR_DATABASE_CONFIDENCE.namedOrganisation,
    });
  });

  it('GeoIP2-ISP: an organisation of its carrier’s family ("AT&T Worldnet Services" of "AT&T Services") names nobody', async () => {
    const record = await source(MAXMIND.isp, '::12.87.118.0/119');
    expect(record.organization).not.toBe(record.isp);
    const { dbs } = await open([mmdb(MAXMIND.isp)]);
    expect(dbs.lookUp('12.87.118.1').answers).toEqual([]);
    expect(dbs.lookUp('12.87.118.1').network.asn).toBe(record.autonomous_system_number);
  });

  it('GeoIP2-ISP: a carrier’s own space is classified only by the ownership source’s verdict on the carrier', async () => {
    const record = await source(MAXMIND.isp, '::1.128.0.0/107');
    expect(record.organization).toBe(record.isp);
    const { dbs: plain } = await open([mmdb(MAXMIND.isp)]);
    expect(plain.lookUp('1.128.0.1').answers).toEqual([]);
    const { dbs } = await open([mmdb(MAXMIND.isp)], { ownerTraffic: ({ asn }) => (asn === record.autonomous_system_number ? 'isp' : null) });
    expect(only(dbs.lookUp('1.128.0.1').answers)).toMatchObject({
      traffic_type: 'isp',
      company_name: null,
      confidence: OPERATOR_DATABASE_CONFIDENCE.owner,
    });
  });

  it('GeoIP2-Domain alone: a domain is a weak hint (it corroborates, it never identifies alone)', async () => {
    const record = await source(MAXMIND.domain, '::1.2.0.0/112');
    const { dbs } = await open([mmdb(MAXMIND.domain)]);
    expect(only(dbs.lookUp('1.2.0.1').answers)).toMatchObject({
      domain: record.domain,
      company_name: null,
      traffic_type: null,
      confidence: OPERATOR_DATABASE_CONFIDENCE.domainOnly,
    });
    expect(only(dbs.lookUp('67.43.156.1').answers).domain).toBe('shoesfin.net');
    // in-addr.arpa is a public suffix, not anybody's domain.
    expect(dbs.lookUp('81.2.64.1').answers).toEqual([]);
  });

  it('GeoIP2-Domain with the reviewed carriers’ domain list: a carrier’s domain classifies instead of naming', async () => {
    const record = await source(MAXMIND.domain, '::71.160.223.0/120');
    const { dbs } = await open([mmdb(MAXMIND.domain)], { domainTraffic: (d) => (d === record.domain ? 'isp' : null) });
    expect(only(dbs.lookUp('71.160.223.1').answers)).toMatchObject({
      traffic_type: 'isp',
      domain: null,
      confidence: OPERATOR_DATABASE_CONFIDENCE.domainList,
    });
    expect(only(dbs.lookUp('1.2.0.1').answers).domain).toBe('maxmind.com');
  });

  it('GeoLite2-ASN: the network’s owner for the other sources; it names a company only on the ownership source’s word', async () => {
    const record = await source(MAXMIND.asn, '1.0.0.0/24');
    const { dbs: plain } = await open([mmdb(MAXMIND.asn)]);
    const lookup = plain.lookUp('1.0.0.1');
    expect(lookup.answers).toEqual([]);
    expect(lookup.network).toEqual({ asn: record.autonomous_system_number, as_organisation: record.autonomous_system_organization, as_domain: null });
    const { dbs } = await open([mmdb(MAXMIND.asn)], { ownerTraffic: ({ asn }) => (asn === record.autonomous_system_number ? 'business' : 'isp') });
    expect(only(dbs.lookUp('1.0.0.1').answers)).toMatchObject({
      traffic_type: 'business',
      company_name: record.autonomous_system_organization,
      domain: null,
    });
  });
});

describe('IPinfo Lite: as_domain for every network', () => {
  it('the network’s AS, its domain and the country, as the sample’s CSV gives them', async () => {
    const rows = await ipinfoRows();
    const { dbs } = await open([IPINFO_LITE]);
    let checked = 0;
    for (const [network, row] of rows) {
      const ip = network.split('/')[0] ?? '';
      const { network: got } = dbs.lookUp(ip);
      expect([network, got.asn]).toEqual([network, row.asn ? Number(row.asn.slice(2)) : null]);
      expect(got.as_organisation).toBe(row.as_name || null);
      expect(got.as_domain).toBe(row.as_domain || null);
      checked += 1;
    }
    expect(checked).toBe(100);
  });

  it('a business network (the ownership source’s word) is named with its as_domain; a host’s classifies', async () => {
    const rows = await ipinfoRows();
    const enecom = rows.get('1.0.64.0/18');
    const cloudflare = rows.get('1.0.0.0/24');
    if (!enecom || !cloudflare) throw new Error('sample rows missing');
    const verdicts = new Map<string, TrafficType>([
      [enecom.as_name ?? '', 'business'],
      [cloudflare.as_name ?? '', 'hosting'],
    ]);
    const { dbs } = await open([IPINFO_LITE], { ownerTraffic: ({ name }) => verdicts.get(name ?? '') ?? null });
    expect(only(dbs.lookUp('1.0.64.1').answers)).toEqual(
      expect.objectContaining({
        provider: 'ipinfo-lite',
        traffic_type: 'business',
        company_name: enecom.as_name,
        domain: enecom.as_domain,
        country_code: enecom.country_code,
      }),
    );
    expect(only(dbs.lookUp('1.0.0.1').answers)).toMatchObject({ traffic_type: 'hosting', company_name: null, domain: null, country_code: 'AU' });
    // Without a verdict on the owner, IPinfo Lite names nobody: every ISP has an as_domain too.
    const { dbs: plain } = await open([IPINFO_LITE]);
    expect(plain.lookUp('1.0.64.1').answers).toEqual([]);
  });
});

describe('several files: one answer per vendor', () => {
  it('MaxMind’s files combine into one vote; IPinfo Lite is another', async () => {
    const { dbs } = await open([mmdb(MAXMIND.isp), mmdb(MAXMIND.domain), mmdb(MAXMIND.connection), mmdb(MAXMIND.anonymous), IPINFO_LITE], {
      ownerTraffic: () => 'hosting',
    });
    // 1.0.0.1: Cable/DSL in Connection-Type, Cloudflare in IPinfo Lite.
    const answers = dbs.lookUp('1.0.0.1').answers;
    expect(answers.map((a) => [a.provider, a.traffic_type])).toEqual([
      ['maxmind', 'isp'],
      ['ipinfo-lite', 'hosting'],
    ]);
    // 1.2.0.1: maxmind.com in Domain, a VPN in Anonymous-IP: the VPN wins and nobody is named.
    const vpn = only(dbs.lookUp('1.2.0.1').answers);
    expect(vpn).toMatchObject({ provider: 'maxmind', traffic_type: 'vpn', domain: null, company_name: null });
    expect(vpn.reason).toContain('GeoIP2-Domain');
    expect(vpn.reason).toContain('GeoIP2-Anonymous-IP');
  });

  it('the network is one file’s: an AS number is never paired with another vendor’s AS name or domain', async () => {
    // 1.0.0.1 is AS15169 in MaxMind's ASN test data and AS13335 (cloudflare.com) in IPinfo's sample.
    const { dbs } = await open([mmdb(MAXMIND.asn), IPINFO_LITE]);
    const asn = await source(MAXMIND.asn, '1.0.0.0/24');
    expect(dbs.lookUp('1.0.0.1').network).toEqual({
      asn: asn.autonomous_system_number,
      as_organisation: asn.autonomous_system_organization,
      as_domain: null,
    });
    const lite = (await ipinfoRows()).get('1.0.0.0/24');
    const { dbs: liteFirst } = await open([IPINFO_LITE, mmdb(MAXMIND.asn)]);
    expect(liteFirst.lookUp('1.0.0.1').network).toEqual({
      asn: Number(lite?.asn?.slice(2)),
      as_organisation: lite?.as_name,
      as_domain: lite?.as_domain,
    });
  });

  it('a satellite carrier’s domain (Domain) on a Satellite line (Connection-Type) is an ISP, not starlinkisp.net the company', async () => {
    expect((await source(MAXMIND.domain, '::214.78.120.0/118')).domain).toBe('starlinkisp.net');
    expect((await source(MAXMIND.connection, '::214.78.120.0/118')).connection_type).toBe('Satellite');
    const { dbs } = await open([mmdb(MAXMIND.domain), mmdb(MAXMIND.connection)]);
    expect(only(dbs.lookUp('214.78.120.1').answers)).toMatchObject({ traffic_type: 'isp', domain: null, company_name: null });
  });

  it('the first file named that gives a field wins it', async () => {
    // 1.124.213.1: Enterprise says cellular (isp); Anonymous-IP says VPN and Tor: flags always count.
    const { dbs } = await open([mmdb(MAXMIND.enterprise), mmdb(MAXMIND.anonymous)]);
    expect(only(dbs.lookUp('1.124.213.1').answers)).toMatchObject({ traffic_type: 'vpn', country_code: 'IR' });
    // 89.160.20.113: Enterprise and ISP both know it; the Enterprise record (government) is named first.
    const { dbs: ordered } = await open([mmdb(MAXMIND.enterprise), mmdb(MAXMIND.isp)]);
    expect(only(ordered.lookUp('89.160.20.113').answers).traffic_type).toBe('government');
  });
});

describe('the naming rules, on records shaped as MaxMind documents them', () => {
  const answerFor = (records: Array<[MaxmindFile, JsonRecord]>, opts: OperatorDatabaseOptions = {}) => {
    const hits = records.map(([file, record]) => {
      const kind = detectDatabaseKind(file.replace(/-Test$/, ''));
      if (!kind) throw new Error(file);
      return { kind, facts: readDatabaseRecord(kind.kind, record) };
    });
    return answerFromDatabases('maxmind', hits, opts);
  };

  it('business traffic of an organisation distinct from its carrier names it, with its domain', async () => {
    const a = await answerFor([
      [
        MAXMIND.enterprise,
        { traits: { user_type: 'business', organization: 'Acme Widgets', isp: 'Comcast Business', domain: 'gw1.acme-widgets.com' } },
      ],
    ]);
    expect(a).toMatchObject({
      traffic_type: 'business',
      company_name: 'Acme Widgets',
      domain: 'acme-widgets.com',
      confidence: OPERATOR_DATABASE_CONFIDENCE.userType,
    });
  });

  it('the carrier’s domain on a customer’s line is not the customer’s domain', async () => {
    const a = await answerFor([
      [MAXMIND.isp, { isp: 'Bredband2 AB', organization: 'Bevtec', autonomous_system_organization: 'Bredband2 AB' }],
      [MAXMIND.domain, { domain: 'bredband2.com' }],
    ]);
    expect(a).toMatchObject({ company_name: 'Bevtec', domain: null, traffic_type: null });
  });

  it('an unclassified hint never identifies alone in consensus; it corroborates another source naming the same domain', async () => {
    const hint = await answerFor([
      [MAXMIND.isp, { isp: 'Level 3 Communications', organization: 'Acme Widgets' }],
      [MAXMIND.domain, { domain: 'acme-widgets.com' }],
    ]);
    expect(hint).toMatchObject({ company_name: 'Acme Widgets', domain: 'acme-widgets.com', traffic_type: null });
    if (!hint) throw new Error('no answer');
    expect(consensus([hint], { weights: {} }).identified).toBe(false);
    const rdns: SourceAnswer = {
      ...hint,
      provider: 'reverse-dns',
      company_name: null,
      confidence: 0.7,
      reason: 'PTR gw1.acme-widgets.com confirmed',
    };
    expect(consensus([hint, rdns], { weights: {} })).toMatchObject({ identified: true, domain: 'acme-widgets.com' });
  });

  it('residential, education and government traffic name nobody, whatever the organisation', async () => {
    for (const userType of ['residential', 'school', 'government']) {
      const a = await answerFor([
        [MAXMIND.enterprise, { traits: { user_type: userType, organization: 'Somebody Else Ltd', isp: 'Carrier', domain: 'somebody.example' } }],
      ]);
      expect(a).toMatchObject({ company_name: null, domain: null });
    }
  });
});

describe('a file that cannot serve stops start-up, naming it', () => {
  async function failure(paths: string[]): Promise<AppError> {
    const err = await rejection(openOperatorDatabases({ paths, log: capturingLogger().log }), AppError);
    expect(err.code).toBe('ip_data_unavailable');
    return err;
  }

  it('a missing file', async () => {
    const missing = path.join(tmp, 'not-there.mmdb');
    const err = await failure([mmdb(MAXMIND.domain), missing]);
    expect(err.message).toContain(`IP_DATABASES: ${missing} cannot be read`);
  });

  it('a file that is not a MaxMind DB', async () => {
    const corrupt = path.join(tmp, 'corrupt.mmdb');
    await writeFile(corrupt, 'this is not a database\n'.repeat(100));
    const err = await failure([corrupt]);
    expect(err.message).toContain(`IP_DATABASES: ${corrupt} is not a MaxMind DB (.mmdb) file or is damaged`);
  });

  it('a truncated database (its metadata intact, its tree cut short or shifted)', async () => {
    const short = path.join(tmp, 'truncated-short.mmdb');
    await writeFile(short, (await readFile(mmdb(MAXMIND.isp))).subarray(40_000));
    expect((await failure([short])).message).toContain(`IP_DATABASES: ${short} is damaged (its search tree is larger than the file)`);
    // Here the tree still fits in the file, but walking it runs into what is no longer a record.
    const shifted = path.join(tmp, 'truncated-shifted.mmdb');
    await writeFile(shifted, (await readFile(mmdb(MAXMIND.enterprise))).subarray(3_000));
    expect((await failure([shifted])).message).toContain(`IP_DATABASES: ${shifted} is damaged (`);
  });

  it('a MaxMind DB of a type Sightline does not read', async () => {
    const require = createRequire(import.meta.url);
    const country = path.join(path.dirname(require.resolve('@ip-location-db/geo-whois-asn-country-mmdb/package.json')), 'geo-whois-asn-country.mmdb');
    const databaseType = new Reader(await readFile(country)).metadata.databaseType;
    const err = await failure([country]);
    expect(err.message).toContain(`IP_DATABASES: ${country} is a "${databaseType}" database, which Sightline does not read`);
    expect(err.message).toContain('GeoIP2-Enterprise');
  });
});

describe('a file replaced on disk is read again', () => {
  async function place(target: string, from: string) {
    // As operators and updaters replace databases: a new file renamed over the old one.
    const staging = `${target}.tmp`;
    await copyFile(from, staging);
    await rename(staging, target);
  }

  it('a good replacement is swapped in; a bad one keeps the old data and warns once', async () => {
    const file = path.join(tmp, 'replaced.mmdb');
    await place(file, mmdb(MAXMIND.domain));
    const { dbs, lines } = await open([file]);
    expect(only(dbs.lookUp('1.2.0.1').answers).domain).toBe('maxmind.com');

    await place(file, mmdb(MAXMIND.anonymous));
    await dbs.refresh();
    expect(only(dbs.lookUp('1.2.0.1').answers).traffic_type).toBe('vpn');
    expect(dbs.files()[0]?.product).toBe('GeoIP2-Anonymous-IP');
    expect(lines.filter((l) => l.msg === 'ip database reloaded')).toHaveLength(1);

    const garbage = path.join(tmp, 'garbage.bin');
    await writeFile(garbage, 'half a download');
    await place(file, garbage);
    await dbs.refresh();
    await dbs.refresh();
    expect(only(dbs.lookUp('1.2.0.1').answers).traffic_type).toBe('vpn');
    const warnings = lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields?.path).toBe(file);

    await unlink(file);
    await dbs.refresh();
    expect(only(dbs.lookUp('1.2.0.1').answers).traffic_type).toBe('vpn');
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(2);

    await place(file, mmdb(MAXMIND.domain));
    await dbs.refresh();
    expect(only(dbs.lookUp('1.2.0.1').answers).domain).toBe('maxmind.com');
  });

  it('the reload timer notices a replacement without being asked', async () => {
    const file = path.join(tmp, 'watched.mmdb');
    await place(file, mmdb(MAXMIND.connection));
    const { dbs } = await open([file], { reloadIntervalMs: 20 });
    expect(only(dbs.lookUp('1.0.1.1').answers).reason).toContain('Cellular');
    await place(file, mmdb(MAXMIND.domain));
    await until('the replaced file to be read', () => dbs.files()[0]?.product === 'GeoIP2-Domain');
    expect(dbs.lookUp('1.0.1.1').answers).toEqual([]);
    expect(only(dbs.lookUp('1.2.0.1').answers).domain).toBe('maxmind.com');
  });
});
