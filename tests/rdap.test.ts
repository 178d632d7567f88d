import {
  createRdapSource,
  DEFAULT_RDAP_OPTIONS,
  interpretNetwork,
  isFreeMailDomain,
  parseBootstrap,
  postgresRdapStore,
  publicAddress,
  purgeExpiredRdapNetworks,
  RdapBootstrap,
  type RdapDeps,
  RdapEnvSchema,
  type RdapNetwork,
  type RdapOptions,
  type RdapSource,
  type RoutingOwner,
  rdapOptionsFromEnv,
  readNetwork,
  SHIPPED_BOOTSTRAP,
} from '@sightline/core/ip/rdap/index';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase, type TestDatabase } from './support/db.ts';
import { type RdapTestServer, startRdapServer } from './support/rdap-server.ts';

/*
 * The RDAP source against real RDAP servers on 127.0.0.1 (tests/support/rdap-server.ts), its cache
 * in Postgres (embedded PGlite, or DATABASE_URL). Network objects follow RFC 9083 §5.4 as ARIN and
 * the RIPE NCC write them: ARIN nests the organisation's points of contact inside the registrant;
 * RIPE lists admin-c and tech-c beside it. Organisations and domains are invented.
 */

type Props = [name: string, value: string][];
const vcard = (props: Props) => ['vcard', [['version', {}, 'text', '4.0'], ...props.map(([n, v]) => [n, {}, n === 'url' ? 'uri' : 'text', v])]];
const entity = (handle: string, roles: string[], props: Props, entities: unknown[] = []) => ({
  objectClassName: 'entity',
  handle,
  roles,
  vcardArray: vcard(props),
  ...(entities.length ? { entities } : {}),
});
const network = (start: string, end: string, name: string, type: string, entities: unknown[], extra: Record<string, unknown> = {}) => ({
  rdapConformance: ['rdap_level_0', 'nro_rdap_profile_0'],
  objectClassName: 'ip network',
  handle: `NET-${start.replace(/[.:]/g, '-')}-1`,
  startAddress: start,
  endAddress: end,
  ipVersion: start.includes(':') ? 'v6' : 'v4',
  name,
  type,
  entities,
  ...extra,
});
const org = (handle: string, name: string, contacts: unknown[] = [], props: Props = []) =>
  entity(handle, ['registrant'], [['fn', name], ['kind', 'org'], ...props], contacts);

const EXAMPLE_BB: RoutingOwner = { name: 'EXBB-AS - Example Broadband Inc, US', domains: ['example-broadband.net'], trafficType: 'isp' };
const VERSATEL: RoutingOwner = { name: 'VERSATEL - 1&1 Versatel Deutschland GmbH', domains: ['versatel-example.de'], trafficType: 'isp' };

let t: TestDatabase;
let registry: RdapTestServer;
const sources: RdapSource[] = [];

const options = (over: Partial<RdapOptions> = {}): RdapOptions => ({ ...DEFAULT_RDAP_OPTIONS, baseUrl: registry.url, timeoutMs: 1500, ...over });
function source(over: Partial<RdapOptions> = {}, deps: RdapDeps = {}): RdapSource {
  const s = createRdapSource({ store: postgresRdapStore(t.db), background: (_name, task) => void task(), ...deps }, options(over));
  sources.push(s);
  return s;
}

beforeAll(async () => {
  t = await openTestDatabase();
  registry = await startRdapServer();
  // An ISP's allocation with a customer's reassignment inside it (ARIN's shapes).
  registry.add(
    network('24.56.0.0', '24.56.255.255', 'EXBB-BLK', 'DIRECT ALLOCATION', [
      org('EXBB', 'Example Broadband Inc', [
        entity(
          'EXBB-NOC',
          ['abuse', 'technical'],
          [
            ['fn', 'Network Operations'],
            ['email', 'abuse@example-broadband.net'],
          ],
        ),
      ]),
    ]),
  );
  registry.add(
    network(
      '24.56.7.0',
      '24.56.7.63',
      'EXBB-ACME-WIDGETS',
      'REASSIGNED',
      [
        org('C07700001', 'Acme Widgets Inc', [
          entity(
            'EXBB-ARIN',
            ['abuse'],
            [
              ['fn', 'Example Broadband Abuse'],
              ['email', 'abuse@example-broadband.net'],
            ],
          ),
          entity(
            'JD1-ARIN',
            ['administrative'],
            [
              ['fn', 'Jane Doe'],
              ['email', 'jane.doe.acme@gmail.com'],
            ],
          ),
          entity(
            'NOC42-ARIN',
            ['technical'],
            [
              ['fn', 'Acme NOC'],
              ['email', 'noc@acme-widgets.com'],
            ],
          ),
        ]),
      ],
      { parentHandle: 'NET-24-56-0-0-1', country: 'US' },
    ),
  );
  registry.add(
    network('24.56.9.0', '24.56.9.15', 'EXBB-BAKERY', 'REASSIGNED', [
      org('C07700002', 'Blue Harbor Bakery LLC', [
        entity(
          'BHB1-ARIN',
          ['administrative', 'technical'],
          [
            ['fn', 'Owner'],
            ['email', 'blueharborbakery@yahoo.com'],
          ],
        ),
        entity('BHB2-ARIN', ['abuse'], [['email', 'bakery@gmail.com']]),
      ]),
    ]),
  );
  registry.add(network('24.57.0.0', '24.57.255.255', 'NORTHWIND', 'DIRECT ALLOCATION', [org('NWN', 'Northwind Networks LLC')]));
  // A registrant whose own contacts are nested two deep.
  registry.add(
    network('24.59.0.0', '24.59.0.255', 'INITRODE', 'DIRECT ASSIGNMENT', [
      org('INIT', 'Initrode Holdings', [
        entity(
          'INIT-IT',
          ['technical'],
          [['fn', 'IT']],
          [
            entity(
              'INIT-OPS',
              ['noc'],
              [
                ['fn', 'Ops'],
                ['email', 'ops@initrode.com'],
              ],
            ),
          ],
        ),
      ]),
    ]),
  );
  // RIPE's shapes: ASSIGNED PA with admin-c and tech-c beside the registrant.
  registry.add(
    network(
      '89.246.64.0',
      '89.246.64.255',
      'GLOBEX-NET',
      'ASSIGNED PA',
      [
        org('ORG-GE1-RIPE', 'Globex Engineering GmbH'),
        entity(
          'GE1-RIPE',
          ['administrative'],
          [
            ['fn', 'Globex IT'],
            ['email', 'it@globex-engineering.de'],
          ],
        ),
        entity(
          'VT-NOC-RIPE',
          ['technical'],
          [
            ['fn', 'Versatel NOC'],
            ['email', 'noc@versatel-example.de'],
          ],
        ),
      ],
      { country: 'DE' },
    ),
  );
  registry.add(network('89.246.65.0', '89.246.65.255', 'VERSATEL-POOL', 'ASSIGNED PA', [org('ORG-VT1-RIPE', '1&1 Versatel Deutschland GmbH')]));
  registry.add(network('24.70.1.0', '24.70.1.63', 'UMBRELLA', 'REASSIGNED', [org('C1', 'Umbrella Labs Inc')]));
  registry.add(network('24.71.0.0', '24.71.3.255', 'SOYLENT', 'DIRECT ASSIGNMENT', [org('SOY', 'Soylent Foods Corp')]));
  registry.add(network('24.75.0.0', '24.75.0.255', 'INITECH', 'DIRECT ASSIGNMENT', [org('INI', 'Initech LLC')]));
  registry.add(network('24.72.0.0', '24.72.255.255', 'CHAIN-BB', 'DIRECT ALLOCATION', [org('CBB', 'Chain Broadband Inc')]));
  registry.add(network('24.80.0.0', '24.80.0.255', 'VANDELAY', 'DIRECT ASSIGNMENT', [org('VAN', 'Vandelay Industries Inc')]));
  registry.add(network('24.81.0.0', '24.81.0.255', 'KRAMERICA', 'DIRECT ASSIGNMENT', [org('KRA', 'Kramerica Industries Inc')]));
  registry.add(
    network('2a02:8100::', '2a02:8100:ffff:ffff:ffff:ffff:ffff:ffff', 'HOOLI-V6', 'ASSIGNED PI', [
      org('ORG-HOO1-RIPE', 'Hooli GmbH', [], [['url', 'https://www.hooli.de/']]),
    ]),
  );
});

afterAll(async () => {
  await Promise.all(sources.map((s) => s.idle()));
  await registry.close();
  await t.drop();
});

describe('what a registration says', () => {
  it('a reassigned customer block inside an ISP range is the customer, with its own domain', async () => {
    const rdap = source();
    expect(await rdap.lookup('24.56.7.10', EXAMPLE_BB)).toEqual({
      provider: 'rdap',
      domain: 'acme-widgets.com',
      company_name: 'Acme Widgets Inc',
      traffic_type: 'business',
      confidence: 0.65,
      country_code: 'US',
      reason: 'RDAP: 24.56.7.0/26 reassigned to Acme Widgets Inc (acme-widgets.com)',
    });
  });

  it("the ISP's own allocation stays isp and names no company", async () => {
    const answer = await source().lookup('24.56.200.1', EXAMPLE_BB);
    expect(answer).toMatchObject({ traffic_type: 'isp', company_name: null, domain: null });
    expect(answer?.reason).toBe('RDAP: 24.56.0.0/16 allocated to Example Broadband Inc, an ISP');
  });

  it('an allocation is isp only when clearly an ISP: its holder routes it and the local data classes that owner an ISP', async () => {
    const rdap = source();
    expect(await rdap.lookup('24.57.1.1', { name: 'NORTHWIND - Northwind Networks LLC, US', trafficType: 'isp' })).toMatchObject({
      traffic_type: 'isp',
      company_name: null,
    });
    expect(await rdap.lookup('24.57.1.1', null)).toBeNull();
    expect(await rdap.lookup('24.57.1.1', { name: 'Someone Else Inc', trafficType: 'isp' })).toBeNull();
  });

  it('nested entities are read: the domain of a contact nested two levels inside the registrant', async () => {
    expect(await source().lookup('24.59.0.9', null)).toMatchObject({ company_name: 'Initrode Holdings', domain: 'initrode.com', confidence: 0.7 });
  });

  it("a RIPE ASSIGNED PA names its holder when the holder is not the routing network's owner, and never the ISP's domain", async () => {
    const rdap = source();
    expect(await rdap.lookup('89.246.64.20', VERSATEL)).toMatchObject({
      traffic_type: 'business',
      company_name: 'Globex Engineering GmbH',
      domain: 'globex-engineering.de',
      country_code: 'DE',
    });
    // Without the routing owner an LIR's own pool cannot be told from a customer's block.
    expect(await rdap.lookup('89.246.64.20', null)).toBeNull();
    // The ISP's assignment to itself: its pools.
    expect(await rdap.lookup('89.246.65.1', VERSATEL)).toMatchObject({ traffic_type: 'isp', company_name: null });
  });

  it('free-mail addresses are ignored: the company is named without a domain', async () => {
    expect(await source().lookup('24.56.9.3', EXAMPLE_BB)).toMatchObject({
      traffic_type: 'business',
      company_name: 'Blue Harbor Bakery LLC',
      domain: null,
      reason: 'RDAP: 24.56.9.0/28 reassigned to Blue Harbor Bakery LLC',
    });
    expect(isFreeMailDomain('gmail.com') && isFreeMailDomain('yahoo.com') && !isFreeMailDomain('acme-widgets.com')).toBe(true);
  });

  it('IPv6: an ASSIGNED PI with its URL', async () => {
    expect(await source().lookup('2a02:8100:1:2::5', null)).toMatchObject({
      company_name: 'Hooli GmbH',
      domain: 'hooli.de',
      reason: 'RDAP: 2a02:8100::/32 assigned to Hooli GmbH (hooli.de)',
    });
  });

  it('private, reserved and malformed addresses, and RDAP=0, send nothing', async () => {
    const before = registry.queries.length;
    const rdap = source();
    for (const ip of ['10.1.2.3', '192.168.0.1', '127.0.0.1', '::1', 'fe80::1', 'not an ip']) expect(await rdap.lookup(ip)).toBeNull();
    expect(await source({ enabled: false }).lookup('24.56.7.10', EXAMPLE_BB)).toBeNull();
    expect(registry.queries.length).toBe(before);
  });
});

describe('the registration types and names, as data', () => {
  const net = (type: string, holder: string, contacts: RdapNetwork['contacts'] = []): RdapNetwork => ({
    startAddress: '198.18.0.0',
    endAddress: '198.18.0.255',
    version: 4,
    handle: null,
    name: 'NET',
    type,
    country: null,
    parentHandle: null,
    contacts: [{ handle: 'H', roles: ['registrant'], kind: 'org', name: holder, org: null, domains: [], parent: null }, ...contacts],
  });

  it('end-user assignments are businesses; onward allocations ISPs; placeholders and unknown types say nothing', () => {
    expect(interpretNetwork(net('ASSIGNED PI', 'Siemens AG'), null)).toMatchObject({ traffic_type: 'business', company_name: 'Siemens AG' });
    expect(interpretNetwork(net('LEGACY', 'Ford Motor Company'), null)).toMatchObject({ traffic_type: 'business' });
    expect(interpretNetwork(net('reassigned', 'Acme Widgets Inc'), null)).toMatchObject({ traffic_type: 'business' });
    expect(interpretNetwork(net('REALLOCATED', 'Regional Net LLC'), null)).toMatchObject({ traffic_type: 'isp', company_name: null });
    expect(interpretNetwork(net('SUB-ALLOCATED PA', 'Regional Net LLC'), null)).toMatchObject({ traffic_type: 'isp' });
    expect(interpretNetwork(net('ALLOCATED PA', 'Some LIR BV'), null)).toBeNull();
    expect(interpretNetwork(net('ALLOCATED TO RIPE NCC', 'RIPE NCC'), null)).toBeNull();
    expect(interpretNetwork(net('SOMETHING NEW', 'Acme Widgets Inc'), null)).toBeNull();
  });

  it("the holder's name classes it: private customers name nobody; universities, governments, ISPs and hosts are not businesses", () => {
    expect(interpretNetwork(net('REASSIGNED', 'Private Customer'), null)).toBeNull();
    expect(interpretNetwork(net('DIRECT ASSIGNMENT', 'Stanford University'), null)).toMatchObject({ traffic_type: 'education', company_name: null });
    expect(interpretNetwork(net('DIRECT ASSIGNMENT', 'City of Springfield'), null)).toMatchObject({ traffic_type: 'government' });
    expect(interpretNetwork(net('ASSIGNED PI', 'Example Telecom GmbH'), null)).toMatchObject({ traffic_type: 'isp' });
    expect(interpretNetwork(net('ASSIGNED PI', 'Fast VPS Hosting Ltd'), null)).toMatchObject({ traffic_type: 'hosting' });
  });

  it("a company's own block routed by itself is that company; routed by an ISP that holds it, the ISP's", () => {
    const ford: RoutingOwner = { name: 'FORD-ASN - Ford Motor Company, US', trafficType: null };
    expect(interpretNetwork(net('DIRECT ASSIGNMENT', 'Ford Motor Company'), ford)).toMatchObject({
      traffic_type: 'business',
      company_name: 'Ford Motor Company',
    });
    const isp: RoutingOwner = { name: 'KPN - KPN B.V.', trafficType: 'isp' };
    expect(interpretNetwork(net('ASSIGNED PI', 'KPN B.V.'), isp)).toMatchObject({ traffic_type: 'isp', company_name: null });
  });

  it("a contact's domain outside the holder's own vCard counts only when it fits the holder's name", () => {
    const contractor = {
      handle: 'C',
      roles: ['technical'],
      kind: 'individual',
      name: 'IT Guy',
      org: null,
      domains: ['it-contractor.com'],
      parent: null,
    };
    expect(interpretNetwork(net('ASSIGNED PI', 'Acme Widgets Inc', [contractor]), null)).toMatchObject({
      company_name: 'Acme Widgets Inc',
      domain: null,
    });
    const own = { ...contractor, domains: ['acmewidgets.co.uk'] };
    expect(interpretNetwork(net('ASSIGNED PI', 'Acme Widgets Inc', [own]), null)).toMatchObject({ domain: 'acmewidgets.co.uk' });
  });

  it("the routing ISP's domain is never the customer's, even on the customer's own record and with the ISP's domains unknown", () => {
    const network = net('REASSIGNED', 'Acme Widgets Inc');
    const holder = network.contacts[0];
    if (!holder) throw new Error('unreachable');
    holder.domains = ['examplebroadband.net'];
    expect(interpretNetwork(network, { name: 'EXBB - Example Broadband Inc' })).toMatchObject({ company_name: 'Acme Widgets Inc', domain: null });
  });
});

describe('one query per registered network', () => {
  it('50 concurrent lookups in one registered network cost one request', async () => {
    const rdap = source();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => rdap.lookup(`24.70.1.${i + 1}`, null)));
    expect(answers.every((a) => a?.company_name === 'Umbrella Labs Inc')).toBe(true);
    expect(registry.count((a) => a.startsWith('24.70.'))).toBe(1);
  });

  it("a lookup whose store read comes back after the block's query finished reads what the query brought", async () => {
    // The store answers late and in turn (a busy pool): the first lookup's query has come and gone
    // before the others learn the store had nothing.
    const store = postgresRdapStore(t.db);
    let reads = 0;
    const slow = {
      read: async (a: Parameters<typeof store.read>[0]) => {
        const row = await store.read(a);
        await new Promise((r) => setTimeout(r, 150 * reads++));
        return row;
      },
      write: store.write,
    };
    const rdap = source({}, { store: slow });
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => rdap.lookup(`24.75.0.${i + 1}`, null)));
    expect(answers.map((a) => a?.company_name)).toEqual(Array(5).fill('Initech LLC'));
    expect(registry.count((a) => a.startsWith('24.75.'))).toBe(1);
  });

  it('50 lookups across a /22 assignment cost one request, and a new process reads them from Postgres with none', async () => {
    const addresses = Array.from({ length: 50 }, (_, i) => `24.71.${i % 4}.${i + 1}`);
    const rdap = source();
    for (const ip of addresses) expect((await rdap.lookup(ip, null))?.company_name).toBe('Soylent Foods Corp');
    await rdap.idle();
    expect(registry.count((a) => a.startsWith('24.71.'))).toBe(1);
    const restarted = source();
    for (const ip of addresses) expect((await restarted.lookup(ip, null))?.company_name).toBe('Soylent Foods Corp');
    expect(registry.count((a) => a.startsWith('24.71.'))).toBe(1);
    // Without a store, memory alone files the network under each of its blocks.
    const memoryOnly = source({}, { store: undefined });
    for (const ip of addresses) expect((await memoryOnly.lookup(ip, null))?.company_name).toBe('Soylent Foods Corp');
    expect(registry.count((a) => a.startsWith('24.71.'))).toBe(2);
  });

  it('an allocation, which may hold customers we were not told of, is trusted for the /24 it was asked about', async () => {
    const rdap = source();
    for (let i = 1; i <= 50; i++) expect(await rdap.lookup(`24.72.5.${i}`, null)).toMatchObject({ traffic_type: 'isp' });
    expect(registry.count((a) => a.startsWith('24.72.5.'))).toBe(1);
    await rdap.lookup('24.72.6.1', null);
    expect(registry.count((a) => a.startsWith('24.72.'))).toBe(2);
  });

  it('negative answers are kept too: an address no registry holds costs one request', async () => {
    const rdap = source();
    expect(await rdap.lookup('24.99.0.1', null)).toBeNull();
    expect(await rdap.lookup('24.99.0.2', null)).toBeNull();
    await rdap.idle();
    expect(await source().lookup('24.99.0.3', null)).toBeNull();
    expect(registry.count((a) => a.startsWith('24.99.'))).toBe(1);
    const [row] = await t.db<{ registration: string | null; covering: string; days: number }>`
      select registration::text as registration, covering::text as covering,
             round(extract(epoch from (expires_at - fetched_at)) / 86400)::int as days
      from rdap_networks where start_address = '24.99.0.0'::inet`;
    expect(row).toEqual({ registration: null, covering: '24.99.0.0/24', days: 30 });
  });
});

describe('budgets and unhelpful registries', () => {
  it('a 429 with Retry-After pauses the server: lookups answer at once from what is known, and the cache fills behind', async () => {
    registry.misbehave((a) => a.startsWith('24.80.'), { kind: 'throttle', retryAfter: '1' });
    const rdap = source();
    expect(await rdap.lookup('24.80.0.1', null)).toBeNull();
    expect(await rdap.lookup('24.81.0.1', null)).toBeNull();
    // The pause holds every query to this server, not only the throttled address's.
    expect(registry.count((a) => a.startsWith('24.81.'))).toBe(0);
    await rdap.idle();
    expect(await rdap.lookup('24.80.0.2', null)).toMatchObject({ company_name: 'Vandelay Industries Inc' });
    expect(await rdap.lookup('24.81.0.2', null)).toMatchObject({ company_name: 'Kramerica Industries Inc' });
    expect(registry.count((a) => a.startsWith('24.80.'))).toBe(2);
    expect(registry.count((a) => a.startsWith('24.81.'))).toBe(1);
  });

  it('a 503 with Retry-After is a pause too; a 503 without one, an outage', async () => {
    registry.add(network('24.82.0.0', '24.82.0.255', 'ACME-TWO', 'DIRECT ASSIGNMENT', [org('A2', 'Second Acme Inc')]));
    registry.misbehave((a) => a.startsWith('24.82.'), { kind: 'throttle', status: 503, retryAfter: '1' });
    const rdap = source();
    expect(await rdap.lookup('24.82.0.1', null)).toBeNull();
    await rdap.idle();
    expect(await rdap.lookup('24.82.0.1', null)).toMatchObject({ company_name: 'Second Acme Inc' });
    expect(registry.count((a) => a.startsWith('24.82.'))).toBe(2);

    const down = await startRdapServer();
    try {
      down.misbehave(() => true, { kind: 'raw', status: 503, body: '' }, 10);
      const failing = source({ baseUrl: down.url });
      expect(await failing.lookup('24.83.0.1', null)).toBeNull();
      expect(await failing.lookup('24.84.0.1', null)).toBeNull();
      expect(down.count()).toBe(1);
    } finally {
      await down.close();
    }
  });

  it('a spent budget never makes a lookup wait: it answers null at once, and what is known still answers', async () => {
    const rdap = source({ budget: { ratePerSecond: 0.001, burst: 1 } });
    expect(await rdap.lookup('24.73.0.1', null)).toBeNull(); // the one request (nobody holds it)
    const before = registry.queries.length;
    expect(await rdap.lookup('24.74.0.1', null)).toBeNull();
    expect(registry.queries.length).toBe(before);
    expect(await rdap.lookup('24.56.7.30', EXAMPLE_BB)).toMatchObject({ company_name: 'Acme Widgets Inc' });
  });

  it('a registry that never answers: the lookup answers within its timeout, and the server is left alone a while', async () => {
    const silent = await startRdapServer();
    try {
      silent.misbehave(() => true, { kind: 'hang' }, 100);
      const rdap = source({ baseUrl: silent.url, timeoutMs: 300 });
      const started = Date.now();
      expect(await rdap.lookup('24.90.0.1', null)).toBeNull();
      expect(Date.now() - started).toBeLessThan(1300);
      // Once its query has failed, the server is paused: the next lookup sends nothing.
      await rdap.idle();
      expect(await rdap.lookup('24.91.0.1', null)).toBeNull();
      expect(silent.count()).toBe(1);
      await rdap.idle();
    } finally {
      await silent.close();
    }
  });

  it('malformed and hostile answers are ignored, bounded, and never thrown', async () => {
    const hostile = await startRdapServer();
    try {
      const deep = '['.repeat(200_000);
      const spam = network(
        '24.100.6.0',
        '24.100.6.255',
        'SPAM',
        'DIRECT ASSIGNMENT',
        Array.from({ length: 1500 }, (_, i) => org(`S${i}`, `Spam Org ${i}`)),
      );
      hostile.misbehave((a) => a === '24.100.0.1', { kind: 'endless', bytes: 8 * 1024 * 1024 });
      hostile.misbehave((a) => a === '24.100.1.1', { kind: 'raw', body: deep });
      hostile.misbehave((a) => a === '24.100.2.1', {
        kind: 'raw',
        body: JSON.stringify({ objectClassName: 'ip network', startAddress: 5, endAddress: [], entities: 'x' }),
      });
      hostile.misbehave((a) => a === '24.100.3.1', {
        kind: 'raw',
        body: JSON.stringify({
          objectClassName: 'ip network',
          startAddress: '24.100.3.0',
          endAddress: '24.100.3.255',
          type: 'DIRECT ASSIGNMENT',
          name: { nested: true },
          country: 12,
          entities: [
            5,
            null,
            { roles: 'registrant', vcardArray: {} },
            { roles: [7, 'registrant'], vcardArray: ['vcard', 'x'] },
            {
              roles: ['registrant'],
              vcardArray: [
                'vcard',
                [
                  [1, 2, 3, 4],
                  ['fn', {}, 'text', {}],
                  ['fn', {}, 'text', 'Real Name Inc'],
                  ['email', {}, 'text', 42],
                ],
              ],
            },
          ],
        }),
      });
      hostile.misbehave((a) => a === '24.100.4.1', { kind: 'raw', body: 'hello, not json' });
      // A server cannot make us cache a range it was not asked about.
      hostile.misbehave((a) => a === '24.100.5.1', {
        kind: 'raw',
        body: JSON.stringify(network('1.0.0.0', '1.255.255.255', 'ALL', 'DIRECT ASSIGNMENT', [org('X', 'Poison Inc')])),
      });
      hostile.misbehave((a) => a === '24.100.6.1', { kind: 'raw', body: JSON.stringify(spam) });
      hostile.misbehave((a) => a === '24.100.7.1', {
        kind: 'raw',
        body: JSON.stringify({ ...network('24.100.7.0', '24.100.7.255', 'E', 'ASSIGNED PI', []), objectClassName: 'entity' }),
      });

      const rdap = source({ baseUrl: hostile.url, budget: { ratePerSecond: 100, burst: 100 } });
      expect(await rdap.lookup('24.100.0.1', null)).toBeNull();
      expect(await rdap.lookup('24.100.1.1', null)).toBeNull();
      expect(await rdap.lookup('24.100.2.1', null)).toBeNull();
      expect(await rdap.lookup('24.100.3.1', null)).toMatchObject({ company_name: 'Real Name Inc', country_code: null });
      expect(await rdap.lookup('24.100.4.1', null)).toBeNull();
      expect(await rdap.lookup('24.100.5.1', null)).toBeNull();
      expect(await rdap.lookup('24.100.6.1', null)).toMatchObject({ company_name: 'Spam Org 0' });
      expect(await rdap.lookup('24.100.7.1', null)).toBeNull();
      await rdap.idle();
      // The endless body was abandoned near the 512 KiB cap, not read to its 8 MiB.
      expect(hostile.endlessBytesWritten).toBeLessThan(4 * 1024 * 1024);
      // A failed block is remembered for a while: asking again sends nothing.
      const asked = hostile.count();
      expect(await rdap.lookup('24.100.4.2', null)).toBeNull();
      expect(hostile.count()).toBe(asked);
      const poisoned = await t.db`select 1 from rdap_networks where start_address = '1.0.0.0'::inet`;
      expect(poisoned).toEqual([]);
    } finally {
      await hostile.close();
    }
  });

  it('the reader keeps to its limits whatever the shape', () => {
    const at = { version: 4 as const, value: (24n << 24n) | (100n << 16n) | (9n << 8n) | 1n };
    expect(readNetwork(`${'{"a":'.repeat(40)}1${'}'.repeat(40)}`, at)).toBeNull();
    const many = network(
      '24.100.9.0',
      '24.100.9.255',
      'N',
      'ASSIGNED PI',
      Array.from({ length: 100 }, (_, i) => org(`O${i}`, `Org ${i}`, [entity('C', ['technical'], [['email', `a@org${i}.com`]])])),
    );
    const read = readNetwork(JSON.stringify(many), at);
    expect(read?.contacts.length).toBe(48);
  });
});

describe('servers: the bootstrap, RDAP_BASE_URL and redirects', () => {
  it('a redirect to a server the bootstrap does not name is refused', async () => {
    const stranger = await startRdapServer();
    try {
      stranger.add(network('24.110.0.0', '24.110.0.255', 'X', 'DIRECT ASSIGNMENT', [org('X', 'Stranger Inc')]));
      registry.misbehave((a) => a === '24.110.0.1', { kind: 'redirect', location: `${stranger.url}ip/24.110.0.1` });
      expect(await source().lookup('24.110.0.1', null)).toBeNull();
      expect(stranger.count()).toBe(0);
    } finally {
      await stranger.close();
    }
  });

  it('a redirect to another server the bootstrap names is followed', async () => {
    const peer = await startRdapServer('/peer/');
    try {
      peer.add(network('24.111.0.0', '24.111.0.255', 'ERX', 'ASSIGNED PI', [org('ORG-P1-RIPE', 'Peer Transferred GmbH')]));
      registry.misbehave((a) => a === '24.111.0.1', { kind: 'redirect', location: `${peer.url}ip/24.111.0.1` });
      const bootstrap = {
        ipv4: {
          services: [
            [['24.0.0.0/8'], [registry.url]],
            [['89.0.0.0/8'], [peer.url]],
          ],
        },
        ipv6: { services: [[['2a00::/12'], [peer.url]]] },
      };
      const rdap = source({ baseUrl: null, bootstrap, bootstrapUrls: { ipv4: `${peer.url}ipv4.json`, ipv6: `${peer.url}ipv6.json` } });
      expect(await rdap.lookup('24.111.0.1', null)).toMatchObject({ company_name: 'Peer Transferred GmbH' });
      expect(peer.count()).toBe(1);
    } finally {
      await peer.close();
    }
  });

  it('the bootstrap is refreshed in the background at most once a day, and its servers used from then on', async () => {
    const iana = await startRdapServer('/rdap/');
    const newServer = await startRdapServer('/new/');
    try {
      newServer.add(network('24.121.0.0', '24.121.0.255', 'MOVED', 'DIRECT ASSIGNMENT', [org('M', 'Moved Along Inc')]));
      iana.files.set('ipv4.json', { services: [[['24.0.0.0/8'], [newServer.url]]] });
      iana.files.set('ipv6.json', { services: [[['2a00::/12'], [newServer.url]]] });
      const rdap = source({
        baseUrl: null,
        bootstrap: { ipv4: { services: [[['24.0.0.0/8'], [registry.url]]] }, ipv6: { services: [[['2a00::/12'], [registry.url]]] } },
        bootstrapUrls: { ipv4: `${iana.url}ipv4.json`, ipv6: `${iana.url}ipv6.json` },
      });
      await rdap.lookup('24.120.0.1', null);
      await rdap.idle();
      expect(await rdap.lookup('24.121.0.1', null)).toMatchObject({ company_name: 'Moved Along Inc' });
      await rdap.lookup('24.122.0.1', null);
      await rdap.idle();
      expect(iana.fileRequests).toBe(2);
      expect(registry.count((a) => a.startsWith('24.121.'))).toBe(0);
    } finally {
      await iana.close();
      await newServer.close();
    }
  });

  it('the shipped bootstrap names each RIR for its space', () => {
    const services = parseBootstrap(SHIPPED_BOOTSTRAP);
    if (!services) throw new Error('the shipped bootstrap does not parse');
    const bootstrap = new RdapBootstrap(services);
    const serverFor = (ip: string) => {
      const address = publicAddress(ip);
      return address && bootstrap.serverFor(address);
    };
    expect(serverFor('8.8.8.8')).toBe('https://rdap.arin.net/registry/');
    expect(serverFor('193.0.6.139')).toBe('https://rdap.db.ripe.net/');
    expect(serverFor('1.1.1.1')).toBe('https://rdap.apnic.net/');
    expect(serverFor('200.160.2.3')).toBe('https://rdap.lacnic.net/rdap/');
    expect(serverFor('41.0.0.1')).toBe('https://rdap.afrinic.net/rdap/');
    expect(serverFor('2a00:1450:4001::1')).toBe('https://rdap.db.ripe.net/');
    expect(serverFor('2600:1f18::1')).toBe('https://rdap.arin.net/registry/');
    expect(serverFor('2410:1::1')).toBe('https://rdap.apnic.net/');
  });
});

describe('configuration and the table', () => {
  it('RDAP, RDAP_BASE_URL, RDAP_TIMEOUT_MS, RDAP_RATE_PER_SECOND and RDAP_BURST become options', () => {
    const defaults = rdapOptionsFromEnv(RdapEnvSchema.parse({}));
    expect(defaults).toMatchObject({ enabled: true, baseUrl: null, timeoutMs: 2000, budget: { ratePerSecond: 1, burst: 5 } });
    const set = rdapOptionsFromEnv(
      RdapEnvSchema.parse({
        RDAP: '0',
        RDAP_BASE_URL: 'http://127.0.0.1:9/rdap/',
        RDAP_TIMEOUT_MS: '500',
        RDAP_RATE_PER_SECOND: '0.5',
        RDAP_BURST: '2',
      }),
    );
    expect(set).toMatchObject({ enabled: false, baseUrl: 'http://127.0.0.1:9/rdap/', timeoutMs: 500, budget: { ratePerSecond: 0.5, burst: 2 } });
    expect(RdapEnvSchema.safeParse({ RDAP_BASE_URL: 'ftp://x' }).success).toBe(false);
  });

  it('expired rows are purged', async () => {
    const store = postgresRdapStore(t.db);
    const address = publicAddress('24.130.0.1');
    if (!address) throw new Error('unreachable');
    await store.write({ range: { version: 4, start: address.value, end: address.value }, network: null }, 'http://x', 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(await store.read(address)).toBeNull();
    expect(await purgeExpiredRdapNetworks(t.db)).toBeGreaterThanOrEqual(1);
  });
});
