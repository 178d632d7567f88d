import { fileURLToPath } from 'node:url';
import { grantCredits } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { startDnsServer } from './support/dns-server.ts';
import { type RdapTestServer, startRdapServer } from './support/rdap-server.ts';
import { seedDirectAccount } from './support/seed.ts';

/**
 * The free identification tier through the production composition (buildDeps over the Node host's
 * runtime, the shipped IP data, no paid provider): the network's owner, forward-confirmed reverse DNS
 * against a real DNS server on 127.0.0.1 (DNS_SERVERS) and RDAP against a real RDAP server on
 * 127.0.0.1 (RDAP_BASE_URL), and IPinfo's Lite sample as the operator's own database (IP_DATABASES).
 * What the sources decide is charged as any identification is.
 */
const IPINFO_LITE = fileURLToPath(new URL('./fixtures/ipinfo-lite/ipinfo_lite_sample.mmdb', import.meta.url));
let env: TestEnv;
let rdap: RdapTestServer;
let dns: Awaited<ReturnType<typeof startDnsServer>>;
let key: string;
let accountId: string;

const ripeAssignedPa = {
  objectClassName: 'ip network',
  handle: '89.246.64.0 - 89.246.64.63',
  startAddress: '89.246.64.0',
  endAddress: '89.246.64.63',
  ipVersion: 'v4',
  name: 'GLOBEX-NET',
  type: 'ASSIGNED PA',
  country: 'DE',
  entities: [
    {
      objectClassName: 'entity',
      roles: ['registrant'],
      vcardArray: [
        'vcard',
        [
          ['version', {}, 'text', '4.0'],
          ['fn', {}, 'text', 'Globex Engineering GmbH'],
          ['kind', {}, 'text', 'org'],
          ['email', {}, 'text', 'noc@globex-engineering.de'],
        ],
      ],
    },
  ],
};

beforeAll(async () => {
  rdap = await startRdapServer();
  rdap.add(ripeAssignedPa);
  dns = await startDnsServer({
    ptr: {
      '19.12.96.7': ['gw1.ford.com'],
      '89.246.65.9': ['dslb-089-246-065-009.089.246.pools.vodafone-ip.de'],
      '1.178.1.9': ['www.acme-widgets.com'],
    },
    a: { 'gw1.ford.com': ['19.12.96.7'], 'www.acme-widgets.com': ['1.178.1.9'] },
  });
  env = await createTestEnv({
    settings: { IP_DATA: '1', RDNS: '1', DNS_SERVERS: dns.server, RDAP: '1', RDAP_BASE_URL: rdap.url, IP_DATABASES: IPINFO_LITE },
  });
  ({ key, account_id: accountId } = await seedDirectAccount(env.deps));
  await grantCredits({ ctx: env.deps, input: { accountId, credits: 100 } });
}, 120_000);
afterAll(async () => {
  await env?.close();
  await rdap?.close();
  await dns?.close();
});

const lookUp = async (ip: string) => {
  const res = await call(env, 'ip-to-company', { method: 'POST', key, body: { ip } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};
const balance = async () => (await env.db<{ b: number }>`select credit_balance as b from accounts where id = ${accountId}`)[0]?.b;

describe('free identification, no paid provider', () => {
  it('names a company from the network it owns, and charges the business match', async () => {
    const before = await balance();
    const answer = await lookUp('171.159.64.1');
    expect(answer).toMatchObject({ identified: true, traffic_type: 'business', company_name: expect.stringMatching(/Bank of America/) });
    expect(answer.reason).toMatch(/AS10794 is Bank of America's own network/);
    expect(await balance()).toBe((before ?? 0) - 5);
  });

  it('confirms a company when a forward-confirmed PTR agrees with the network owner', async () => {
    const answer = await lookUp('19.12.96.7');
    expect(answer).toMatchObject({ identified: true, domain: 'ford.com', confidence_level: 'confirmed' });
  });

  it("takes the domain from the operator's IPinfo Lite once ownership calls the network a company's own", async () => {
    // 1.7.24.0/24: IMS Health India's AS133388, whose as_domain the sample gives. IPinfo Lite names
    // a network's domain only on the ownership source's word that the network is a business's (every
    // ISP has an as_domain too), and resolveFree passes that word for the address's own AS.
    const answer = await lookUp('1.7.24.1');
    expect(answer).toMatchObject({ identified: true, traffic_type: 'business', company_name: 'IMS Health India Pvt Ltd', domain: 'imshealth.com' });
  });

  it("finds a customer's block inside an ISP's network from RDAP, with the customer's domain", async () => {
    const answer = await lookUp('89.246.64.20');
    expect(answer).toMatchObject({ identified: true, traffic_type: 'business', domain: 'globex-engineering.de' });
  });

  it("keeps the ISP's own addresses an ISP, free", async () => {
    const before = await balance();
    const answer = await lookUp('89.246.65.9');
    expect(answer).toMatchObject({ identified: false, traffic_type: 'isp' });
    expect(await balance()).toBe(before);
  });

  it('keeps an address in a hosting range hosting, whatever its confirmed PTR says', async () => {
    expect(await lookUp('1.178.1.9')).toMatchObject({ identified: false, traffic_type: 'hosting' });
  });

  it('answers from what it knows when the resolver and the registry never answer', async () => {
    dns.setMode('silent');
    rdap.misbehave((a) => a === '171.159.64.9', { kind: 'hang' });
    try {
      // Bank of America's network again, at an address neither source has seen: the owner still names it.
      expect(await lookUp('171.159.64.9')).toMatchObject({ identified: true, domain: 'bankofamerica.com' });
    } finally {
      dns.setMode('answer');
    }
  });

  it('refuses a business answer an account cannot pay for with a 402, and still answers an ISP free', async () => {
    const broke = await seedDirectAccount(env.deps, 'Broke');
    const refused = await call(env, 'ip-to-company', { method: 'POST', key: broke.key, body: { ip: '171.159.64.20' } });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ success: false, code: 'insufficient_credits' });
    const free = await call(env, 'ip-to-company', { method: 'POST', key: broke.key, body: { ip: '89.246.65.9' } });
    expect(free.status).toBe(200);
    expect(free.body).toMatchObject({ traffic_type: 'isp' });
  });
});
