import { MAX_TRAFFIC_RULES, type PersonMatcher, workTrackerQueue } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, replicaEnv, type TestEnv } from './support/app.ts';
import { realIpDeps, tableProvider } from './support/ip.ts';
import { seedDirectKey, seedPartner } from './support/seed.ts';
import { pageView, type TrackedSite, trackedChild } from './support/tracker.ts';

/**
 * Traffic rules (docs/decisions/traffic-rules.md): a customer excludes address ranges, company
 * domains, page paths and countries. Each is proved where the customer would look: the beacon or
 * identification stored as excluded, no identification and no ID used (the child's subscription),
 * and visitor-stats counting it by the rule's kind; removing the rule lets the next beacon through.
 *
 * Addresses: 17.x is Apple's own network (US, apple.com, a business in the shipped data);
 * 194.39.131.x is in Germany with no local answer, so the table provider names SAP.
 */
const APPLE = (n: number) => `17.253.${Math.floor(n / 250)}.${(n % 250) + 1}`;
const GERMAN = (n: number) => `194.39.131.${n}`;
const sap = tableProvider(
  'alpha',
  Object.fromEntries(
    [1, 2, 3, 4].map((n) => [
      GERMAN(n),
      { domain: 'sap.com', company_name: 'SAP SE', confidence: 0.9, traffic_type: 'business', country_code: 'DE' },
    ]),
  ),
);
/** The person matcher port: who it was asked about (an excluded company never is). */
const asked: string[] = [];
const personMatch: PersonMatcher = {
  name: 'table',
  async matchPerson({ ip }) {
    asked.push(ip);
    return null;
  },
};

let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;

beforeAll(async () => {
  env = await createTestEnv({ ip: async (db) => ({ ...(await realIpDeps({ providers: [sap.provider], timeoutMs: 300 })(db)), personMatch }) });
  partner = await seedPartner(env.deps, { quota: 1000 });
});
afterAll(async () => {
  await env?.close();
});

const work = (on: TestEnv = env) => workTrackerQueue({ ctx: on.deps, input: {} });
const addRule = (key: string, body: Record<string, unknown>, on: TestEnv = env) => call(on, 'traffic-rule-create', { key, body });
const removeRule = (key: string, id: unknown, on: TestEnv = env) => call(on, 'traffic-rule-delete', { key, body: { id } });

/** IDs the site's key used this period: the ledger. */
async function idsUsed(site: TrackedSite): Promise<number | undefined> {
  const [s] = await env.db<{ used: number }>`select ids_used_this_period as used from child_subscriptions where api_key_id = ${site.apiKeyId}`;
  return s?.used;
}

/** What was stored of the address's beacons and its identifications, and whether a visitor was identified. */
async function stored(site: TrackedSite, ip: string) {
  const events = await env.db<{ excluded_by: string | null }>`
    select excluded_by from tracker_events where website_id = ${site.websiteId} and ip = ${ip}::inet order by id`;
  const identifications = await env.db<{ status: string; excluded_by: string | null }>`
    select status, excluded_by from identifications where website_id = ${site.websiteId} and ip = ${ip}::inet`;
  const [visitor] = await env.db<{ identified: boolean; pages: number }>`
    select identification_id is not null as identified, pages_viewed as pages from visitors where website_id = ${site.websiteId} and ip = ${ip}::inet`;
  return { events: events.map((e) => e.excluded_by), identifications, visitor: visitor ?? null };
}

async function mix(site: TrackedSite): Promise<Record<string, number>> {
  const res = await call(env, 'visitor-stats', { key: site.key });
  expect(res.status).toBe(200);
  return res.body.traffic_mix as Record<string, number>;
}

async function ruleId(res: Awaited<ReturnType<typeof call>>): Promise<string> {
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return (res.body.rule as { id: string }).id;
}

describe('each kind of rule excludes, is counted by its kind, and lets the next beacon through once removed', () => {
  it('cidr: the network’s beacons are stored excluded, never folded, identified or charged', async () => {
    const site = await trackedChild(env, partner.key);
    const id = await ruleId(await addRule(site.key, { website_id: site.websiteId, kind: 'cidr', value: '17.253.0.0/24' }));
    await pageView(env, site, APPLE(1));
    await pageView(env, site, APPLE(1), { path: '/pricing' });
    const report = await work();
    expect(report.identifications.identified).toBe(0);
    expect(await stored(site, APPLE(1))).toEqual({ events: ['cidr', 'cidr'], identifications: [], visitor: null });
    expect(await idsUsed(site)).toBe(0);
    expect(await mix(site)).toMatchObject({ excluded_cidr: 1, excluded_path: 0, business: 0 });

    expect((await removeRule(site.key, id)).status).toBe(200);
    await pageView(env, site, APPLE(1), { path: '/about' });
    expect((await work()).identifications.identified).toBe(1);
    const after = await stored(site, APPLE(1));
    expect(after.events).toEqual(['cidr', 'cidr', null]);
    expect(after.identifications).toEqual([{ status: 'identified', excluded_by: null }]);
    expect(after.visitor).toEqual({ identified: true, pages: 1 });
    expect(await idsUsed(site)).toBe(1);
  });

  it('path: beacons of a matching page are excluded; /careers* matches below it, /team only itself', async () => {
    const site = await trackedChild(env, partner.key);
    const careers = await ruleId(await addRule(site.key, { website_id: site.websiteId, kind: 'path', value: '/careers*' }));
    await ruleId(await addRule(site.key, { website_id: site.websiteId, kind: 'path', value: '/team' }));
    await pageView(env, site, APPLE(10), { path: '/careers/engineer?ref=x' });
    await pageView(env, site, APPLE(11), { path: '/team' });
    await pageView(env, site, APPLE(12), { path: '/team/alice' });
    await work();
    expect((await stored(site, APPLE(10))).events).toEqual(['path']);
    expect((await stored(site, APPLE(10))).identifications).toEqual([]);
    expect((await stored(site, APPLE(11))).events).toEqual(['path']);
    expect(await stored(site, APPLE(12))).toMatchObject({ events: [null], identifications: [{ status: 'identified', excluded_by: null }] });
    expect(await idsUsed(site)).toBe(1);
    expect(await mix(site)).toMatchObject({ excluded_path: 2, business: 1 });

    expect((await removeRule(site.key, careers)).status).toBe(200);
    await pageView(env, site, APPLE(10), { path: '/careers/engineer' });
    await work();
    expect((await stored(site, APPLE(10))).identifications).toEqual([{ status: 'identified', excluded_by: null }]);
    expect(await idsUsed(site)).toBe(2);
  });

  it('domain (account-wide): the company is stored excluded once the waterfall names it, never charged, nobody looked up behind it', async () => {
    const site = await trackedChild(env, partner.key);
    const id = await ruleId(await addRule(site.key, { kind: 'domain', value: 'Apple.com' }));
    asked.length = 0;
    await pageView(env, site, APPLE(20));
    const report = await work();
    expect(report.identifications).toMatchObject({ identified: 0, excluded: 1 });
    const s = await stored(site, APPLE(20));
    expect(s.identifications).toEqual([{ status: 'excluded', excluded_by: 'domain' }]);
    // The visit is the visitor's; no identification is attached to it.
    expect(s.visitor).toEqual({ identified: false, pages: 1 });
    expect(asked).toEqual([]);
    expect(await idsUsed(site)).toBe(0);
    const [events] = await env.db<{
      n: number;
    }>`select count(*)::int as n from events where child_api_key_id = ${site.apiKeyId} and event = 'visitor_identified'`;
    expect(events?.n).toBe(0);
    expect(await mix(site)).toMatchObject({ excluded_domain: 1, business: 0 });
    // The identification list shows it, excluded, with no company.
    const listed = await call(env, '/identification-list', { key: site.key, query: { website_id: site.websiteId, status: 'excluded' } });
    expect(listed.status).toBe(200);
    expect(listed.body.identifications).toMatchObject([{ status: 'excluded', company: null }]);

    // While the rule stands, another beacon leaves it excluded.
    await pageView(env, site, APPLE(20), { path: '/again' });
    await work();
    expect((await stored(site, APPLE(20))).identifications).toEqual([{ status: 'excluded', excluded_by: 'domain' }]);

    expect((await removeRule(site.key, id)).status).toBe(200);
    await pageView(env, site, APPLE(20), { path: '/pricing' });
    expect((await work()).identifications.identified).toBe(1);
    expect(await stored(site, APPLE(20))).toMatchObject({
      identifications: [{ status: 'identified', excluded_by: null }],
      visitor: { identified: true },
    });
    expect(await idsUsed(site)).toBe(1);
  });

  it('country: a visitor of the country is stored excluded and never charged; removed, the next beacon is identified', async () => {
    const site = await trackedChild(env, partner.key);
    const id = await ruleId(await addRule(site.key, { website_id: site.websiteId, kind: 'country', value: 'de' }));
    await pageView(env, site, GERMAN(1));
    await pageView(env, site, APPLE(30));
    await work();
    expect((await stored(site, GERMAN(1))).identifications).toEqual([{ status: 'excluded', excluded_by: 'country' }]);
    expect((await stored(site, APPLE(30))).identifications).toEqual([{ status: 'identified', excluded_by: null }]);
    expect(await idsUsed(site)).toBe(1);
    expect(await mix(site)).toMatchObject({ excluded_country: 1, business: 1 });

    expect((await removeRule(site.key, id)).status).toBe(200);
    await pageView(env, site, GERMAN(1), { path: '/next' });
    await work();
    expect((await stored(site, GERMAN(1))).identifications).toEqual([{ status: 'identified', excluded_by: null }]);
    expect(await idsUsed(site)).toBe(2);
  });

  it('an account-wide rule applies to every website of the account, another account’s rule to none of them', async () => {
    const site = await trackedChild(env, partner.key);
    const other = await trackedChild(env, partner.key);
    await ruleId(await addRule(other.key, { kind: 'cidr', value: '17.253.0.40' }));
    await ruleId(await addRule(site.key, { kind: 'cidr', value: '17.253.0.41' }));
    await pageView(env, site, APPLE(39));
    await pageView(env, site, APPLE(40));
    await work();
    expect((await stored(site, APPLE(39))).identifications).toEqual([{ status: 'identified', excluded_by: null }]);
    expect((await stored(site, APPLE(40))).events).toEqual(['cidr']);
  });
});

describe('the rules API', () => {
  it('normalises each kind, answers a repeated rule with the one there is, and lists them', async () => {
    const site = await trackedChild(env, partner.key);
    const first = await addRule(site.key, { website_id: site.websiteId, kind: 'cidr', value: '10.1.2.3/16' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ success: true, created: true, rule: { kind: 'cidr', value: '10.1.0.0/16', website_id: site.websiteId } });
    const again = await addRule(site.key, { website_id: site.websiteId, kind: 'cidr', value: '10.1.0.0/16' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, rule: { id: (first.body.rule as { id: string }).id } });
    for (const [kind, value, canonical] of [
      ['cidr', '2001:DB8::1', '2001:db8::1/128'],
      ['domain', 'Agency.co.uk.', 'agency.co.uk'],
      ['path', '/blog/*/draft', '/blog/*/draft'],
      ['country', 'gb', 'GB'],
    ] as const) {
      const res = await addRule(site.key, { kind, value });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.rule).toMatchObject({ kind, value: canonical, website_id: null });
    }
    const listed = await call(env, 'traffic-rules', { key: site.key });
    expect(listed.status).toBe(200);
    expect((listed.body.rules as { website_id: string | null }[]).map((r) => r.website_id)).toEqual([null, null, null, null, site.websiteId]);
    const narrowed = await call(env, 'traffic-rules', { key: site.key, query: { website_id: site.websiteId } });
    expect(narrowed.body.rules).toHaveLength(1);
  });

  it('bad input is a 400 that names what is wrong, and adds nothing', async () => {
    const site = await trackedChild(env, partner.key);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ kind: 'ip', value: '10.0.0.1' }, /kind/],
      [{ kind: 'cidr' }, /value/],
      [{ kind: 'cidr', value: 'not-an-address' }, /IP address or a CIDR/],
      [{ kind: 'cidr', value: '10.0.0.0/33' }, /IP address or a CIDR/],
      [{ kind: 'cidr', value: '10.0.0.0/4' }, /no wider than \/8/],
      [{ kind: 'cidr', value: '::/0' }, /no wider than \/16/],
      [{ kind: 'domain', value: 'https://acme.com' }, /without a scheme/],
      [{ kind: 'domain', value: 'www.acme.com' }, /registrable domain like acme.com/],
      [{ kind: 'domain', value: 'co.uk' }, /public suffix/],
      [{ kind: 'path', value: 'careers' }, /starting with \//],
      [{ kind: 'path', value: '/careers?x=1' }, /without a query/],
      [{ kind: 'country', value: 'Germany' }, /two-letter/],
      [{ kind: 'country', value: 'D1' }, /two-letter/],
      [{ kind: 'country', value: 'DE', website_id: 'nope' }, /website_id/],
    ];
    for (const [body, error] of cases) {
      const res = await addRule(site.key, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(String(res.body.error), JSON.stringify(body)).toMatch(error);
    }
    expect((await call(env, 'traffic-rules', { key: site.key })).body.rules).toEqual([]);
    expect((await removeRule(site.key, 'nope')).status).toBe(400);
  });

  it('an account holds at most MAX_TRAFFIC_RULES: one more is a 409, a repeat of one it has is still answered', async () => {
    const site = await trackedChild(env, partner.key);
    const [account] = await env.db<{ id: string }>`select account_id as id from api_keys where id = ${site.apiKeyId}`;
    await env.db`
      insert into traffic_rules (account_id, kind, value)
      select ${account?.id ?? ''}::uuid, 'path', '/filled/' || n from generate_series(1, ${MAX_TRAFFIC_RULES - 1}) n`;
    expect((await addRule(site.key, { kind: 'path', value: '/last' })).status).toBe(201);
    const over = await addRule(site.key, { kind: 'path', value: '/one-more' });
    expect(over.status).toBe(409);
    expect(String(over.body.error)).toMatch(/most it may have/);
    expect((await addRule(site.key, { kind: 'path', value: '/last' })).status).toBe(200);
  });

  it('a key of another account neither sees nor removes the rules, nor adds one to its websites', async () => {
    const site = await trackedChild(env, partner.key);
    const stranger = await trackedChild(env, (await seedPartner(env.deps, { quota: 10 })).key);
    const id = await ruleId(await addRule(site.key, { website_id: site.websiteId, kind: 'country', value: 'FR' }));
    const account = await ruleId(await addRule(site.key, { kind: 'country', value: 'IT' }));
    expect((await call(env, 'traffic-rules', { key: stranger.key })).body.rules).toEqual([]);
    expect((await call(env, 'traffic-rules', { key: stranger.key, query: { website_id: site.websiteId } })).body.rules).toEqual([]);
    for (const rule of [id, account]) {
      const res = await removeRule(stranger.key, rule);
      expect(res.status).toBe(404);
      expect(String(res.body.error)).toMatch(/no such traffic rule/);
    }
    const foreign = await addRule(stranger.key, { website_id: site.websiteId, kind: 'country', value: 'ES' });
    expect(foreign.status).toBe(404);
    expect(String(foreign.body.error)).toMatch(/no such website/);
    expect((await call(env, 'traffic-rules', { key: site.key })).body.rules).toHaveLength(2);
    expect((await call(env, 'traffic-rules', { key: site.key, query: {} })).status).toBe(200);
    expect((await call(env, 'traffic-rules', { key: 'sk_not_a_key' })).status).toBe(401);
  });

  it('a key scoped to its own websites manages those websites’ rules only', async () => {
    const scoped = await seedDirectKey(env.deps, partner.account_id);
    const partnerRule = await ruleId(await addRule(partner.key, { kind: 'cidr', value: '198.51.100.0/24' }));
    const own = await addRule(scoped.key, { website_id: scoped.website_id, kind: 'path', value: '/admin*' });
    expect(own.status).toBe(201);
    const accountWide = await addRule(scoped.key, { kind: 'path', value: '/admin*' });
    expect(accountWide.status).toBe(403);
    expect(String(accountWide.body.error)).toMatch(/scoped to its own websites/);
    const partners = await removeRule(scoped.key, partnerRule);
    expect(partners.status).toBe(403);
    expect(String(partners.body.error)).toMatch(/account-wide/);
    const listed = await call(env, 'traffic-rules', { key: scoped.key });
    expect((listed.body.rules as { value: string }[]).map((r) => r.value)).toEqual(['/admin*']);
    // The partner's master key sees both, and removes the scoped key's.
    expect(((await call(env, 'traffic-rules', { key: partner.key })).body.rules as unknown[]).length).toBeGreaterThanOrEqual(2);
    expect((await removeRule(partner.key, (own.body.rule as { id: string }).id)).status).toBe(200);
  });
});

describe('two replicas', () => {
  it('a rule added through one replica applies to the next beacon the other takes, and its removal too', async () => {
    const second = await replicaEnv(env, { ip: async (db) => realIpDeps({ providers: [sap.provider], timeoutMs: 300 })(db) });
    try {
      const site = await trackedChild(env, partner.key);
      // Both replicas have worked this website before the rule exists.
      await pageView(second, site, APPLE(50));
      await work(second);
      await pageView(env, site, APPLE(51));
      await work(env);
      expect(await idsUsed(site)).toBe(2);

      const id = await ruleId(await addRule(site.key, { kind: 'cidr', value: '17.253.0.0/26' }));
      const country = await ruleId(await addRule(site.key, { kind: 'country', value: 'DE' }));
      await pageView(second, site, APPLE(52));
      await pageView(second, site, GERMAN(2));
      await work(second);
      expect((await stored(site, APPLE(52))).events).toEqual(['cidr']);
      expect((await stored(site, GERMAN(2))).identifications).toEqual([{ status: 'excluded', excluded_by: 'country' }]);
      expect(await idsUsed(site)).toBe(2);

      expect((await removeRule(site.key, id, second)).status).toBe(200);
      expect((await removeRule(site.key, country, second)).status).toBe(200);
      await pageView(env, site, APPLE(52), { path: '/next' });
      await pageView(env, site, GERMAN(2), { path: '/next' });
      await work(env);
      expect((await stored(site, APPLE(52))).identifications).toEqual([{ status: 'identified', excluded_by: null }]);
      expect((await stored(site, GERMAN(2))).identifications).toEqual([{ status: 'identified', excluded_by: null }]);
      expect(await idsUsed(site)).toBe(4);
    } finally {
      await second.close();
    }
  });
});
