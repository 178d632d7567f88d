import { aggregateTrackerEvents, identifyVisitors, type PersonMatcher, workTrackerQueue } from '@sightline/core';
import { verifyWebhook } from '@sightline/webhook-verify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdentificationSettler } from '../packages/core/src/tracker/settle-identifications.ts';
import { createTestEnv, fn, socketPeer, type TestEnv } from './support/app.ts';
import { countingStatements } from './support/counting-db.ts';
import { usingPostgres } from './support/db.ts';
import { eventsOf, names } from './support/events.ts';
import { realIpDeps, tableProvider } from './support/ip.ts';
import { startReceiver } from './support/receiver.ts';
import { createChildVia, seedDirectKey, seedPartner, uniqueDomain } from './support/seed.ts';
import { pageView, type TrackedSite, trackedChild } from './support/tracker.ts';

/**
 * Visitor identification through the ID ledger, counted where the user counts it: IDs in the
 * child's subscription and the partner's pool, identifications and events in the database, and
 * webhooks at a real receiver.
 *
 * Addresses: 17.x is Apple's own network (US, a business in the shipped data); 194.39.131.1 is in
 * Germany with no local answer, so a provider decides; the rest are free traffic in the shipped data.
 */
const APPLE = (n: number) => `17.253.${Math.floor(n / 250)}.${(n % 250) + 1}`;
const GERMAN_BUSINESS = '194.39.131.1';
/** Asked of no provider before the test that needs one to be asked. */
const UNASKED = '194.39.131.2';
const sap = tableProvider('alpha', {
  [GERMAN_BUSINESS]: { domain: 'sap.com', company_name: 'SAP SE', confidence: 0.9, traffic_type: 'business' },
  [UNASKED]: { domain: 'sap.com', company_name: 'SAP SE', confidence: 0.9, traffic_type: 'business' },
});
const sap2 = tableProvider('beta', { [GERMAN_BUSINESS]: { domain: 'sap.com', company_name: 'SAP SE', confidence: 0.9, traffic_type: 'business' } });

/** The person matcher port, answering for Apple addresses only (its HTTP adapter is tested with msw). */
const matched: string[] = [];
const personMatch: PersonMatcher = {
  name: 'table',
  async matchPerson({ ip, domain }) {
    matched.push(ip);
    if (domain !== 'apple.com' || ip !== APPLE(1)) return null;
    return { provider: 'table', linkedin_url: 'https://www.linkedin.com/in/jane-doe', name: 'Jane Doe', title: 'VP Engineering', company: 'Apple' };
  },
};

/** What the worker warned of (a settle batch refused, say). */
const warnings: string[] = [];
let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  env = await createTestEnv({
    ip: async (db) => ({ ...(await realIpDeps({ providers: [sap.provider, sap2.provider], timeoutMs: 300 })(db)), personMatch }),
    pool: 8,
    log: { debug() {}, info() {}, warn: (msg) => void warnings.push(msg), error() {} },
  });
  partner = await seedPartner(env.deps, { quota: 1000 });
  receiver = await startReceiver();
});
afterAll(async () => {
  await env.close();
  await receiver.close();
});

type Site = TrackedSite;
const child = (body: Record<string, unknown> = {}) => trackedChild(env, partner.key, body);
const visit = (site: Site, ip: string, opts: Parameters<typeof pageView>[3] = {}) => pageView(env, site, ip, opts);

const work = () => workTrackerQueue({ ctx: env.deps, input: {} });

async function usage(apiKeyId: string) {
  const [s] = await env.db<{ used: number; topup: number; status: string }>`
    select s.ids_used_this_period as used, s.topup_balance as topup, k.status
    from child_subscriptions s join api_keys k on k.id = s.api_key_id where s.api_key_id = ${apiKeyId}`;
  return s;
}

async function identification(site: Site, ip: string) {
  const rows = await env.db<Record<string, unknown>>`
    select status, identification_type, traffic_type, domain, company_name, country, person_linkedin_url, person_linkedin_name,
           person_linkedin_title, person_linkedin_company
    from identifications where website_id = ${site.websiteId} and ip = ${ip}::inet`;
  return rows;
}

describe('identification uses one ID per business identification', () => {
  it('identifies a US visitor as an individual when a person matches, uses one ID, and signs visitor_identified to the child', async () => {
    const site = await child({ webhook_url: receiver.url, webhook_secret: 'child-secret-1' });
    await visit(site, APPLE(1), { path: '/' });
    await visit(site, APPLE(1), { path: '/pricing' });
    const report = await work();
    expect(report.identifications).toMatchObject({ identified: 1, failed: 0, dropped: 0 });
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 1, status: 'active' });
    expect(await identification(site, APPLE(1))).toEqual([
      {
        status: 'identified',
        identification_type: 'individual',
        traffic_type: 'business',
        domain: 'apple.com',
        company_name: 'Apple Inc.',
        country: 'US',
        person_linkedin_url: 'https://www.linkedin.com/in/jane-doe',
        person_linkedin_name: 'Jane Doe',
        person_linkedin_title: 'VP Engineering',
        person_linkedin_company: 'Apple',
      },
    ]);
    await env.settle();
    const delivered = receiver.received.filter((r) => r.headers['x-service-event'] === 'visitor_identified');
    expect(delivered).toHaveLength(1);
    const event = await verifyWebhook<Record<string, unknown>>(delivered[0]?.body ?? '', delivered[0]?.headers ?? {}, 'child-secret-1');
    expect(event.data).toMatchObject({
      child_api_key_id: site.apiKeyId,
      website_id: site.websiteId,
      tracker_site: site.domain,
      ip: APPLE(1),
      identification_type: 'individual',
      company: { name: 'Apple Inc.', domain: 'apple.com', country: 'US' },
      individual: { linkedin_url: 'https://www.linkedin.com/in/jane-doe', linkedin_name: 'Jane Doe' },
      visit: { pages_viewed: 2, visit_count: 1, high_intent: true },
    });
  });

  it('uses nothing for repeat visits within the period, and identifies afresh in the next period', async () => {
    const site = await child({ webhook_url: receiver.url, webhook_secret: 'child-secret-repeat' });
    await visit(site, APPLE(2));
    await work();
    await visit(site, APPLE(2), { session: 'later', path: '/again' });
    await visit(site, APPLE(2), { session: 'later-2' });
    await work();
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 1 });
    expect(names(await eventsOf(env.db, site.apiKeyId)).filter((n) => n === 'visitor_identified')).toHaveLength(1);
    // The period rolls over: the same address is a new identification.
    await env.db`update child_subscriptions set current_period_start = now(), current_period_end = now() + interval '30 days', ids_used_this_period = 0
                 where api_key_id = ${site.apiKeyId}`;
    await visit(site, APPLE(2), { session: 'next-period' });
    await work();
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 1 });
    expect((await identification(site, APPLE(2))).map((r) => r.status)).toEqual(['identified', 'identified']);
    // list-visitors counts both, one per period.
    const listed = await env.app.request(fn('list-visitors'), { headers: { 'x-access-key': site.key } });
    expect(((await listed.json()) as { visitors: unknown[] }).visitors).toEqual([expect.objectContaining({ ip: APPLE(2), lookup_count: 2 })]);
  });

  it('identifies an EU visitor as a company and stores no personal data anywhere', async () => {
    const site = await child({ webhook_url: receiver.url, webhook_secret: 'child-secret-2' });
    matched.length = 0;
    await visit(site, GERMAN_BUSINESS);
    await work();
    expect(matched).toEqual([]); // the person matcher is not even asked
    const [row] = await identification(site, GERMAN_BUSINESS);
    expect(row).toMatchObject({ status: 'identified', identification_type: 'company', domain: 'sap.com', country: 'DE' });
    const [personal] = await env.db<{ n: number }>`
      select count(*)::int as n from identifications
      where country <> 'US' and num_nonnulls(person_linkedin_url, person_linkedin_name, person_linkedin_title, person_linkedin_company) > 0`;
    expect(personal?.n).toBe(0);
    const [body] = await env.db<{ individual: unknown }>`
      select (body::jsonb -> 'data' -> 'individual') as individual from events
      where child_api_key_id = ${site.apiKeyId} and event = 'visitor_identified'`;
    expect(body?.individual).toBeNull();
    // And the database refuses a person on a non-US identification, whatever the code does.
    await expect(
      env.db`update identifications set identification_type = 'individual', person_linkedin_url = 'https://www.linkedin.com/in/x'
             where website_id = ${site.websiteId}`,
    ).rejects.toThrow(/check/i);
  });

  it('identifies a US company as a company when no person matches', async () => {
    const site = await child();
    await visit(site, APPLE(3));
    await work();
    expect(await identification(site, APPLE(3))).toEqual([expect.objectContaining({ identification_type: 'company', person_linkedin_url: null })]);
  });

  it('uses no ID for vpn, hosting, isp, education, government or bots', async () => {
    const site = await child();
    const free = ['185.65.134.1', '3.5.140.1', '80.128.0.1', '193.60.0.1', '198.116.0.1'];
    for (const ip of free) await visit(site, ip);
    await visit(site, APPLE(4), { userAgent: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' });
    const report = await work();
    expect(report.identifications).toMatchObject({ identified: 0, failed: free.length });
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 0 });
    const types = await env.db<{ traffic_type: string }>`
      select traffic_type from identifications where website_id = ${site.websiteId} and status = 'failed' order by traffic_type`;
    expect(types.map((t) => t.traffic_type)).toEqual(['education', 'government', 'hosting', 'isp', 'vpn']);
    expect(await identification(site, APPLE(4))).toEqual([]);
    expect(names(await eventsOf(env.db, site.apiKeyId))).not.toContain('visitor_identified');
  });

  it('records a suspended child’s visits but identifies nothing and uses nothing', async () => {
    const site = await child();
    await env.app.request(fn('partner-update-child'), {
      method: 'POST',
      headers: { 'x-access-key': partner.key, 'content-type': 'application/json' },
      body: JSON.stringify({ child_api_key_id: site.apiKeyId, status: 'suspended' }),
    });
    expect((await usage(site.apiKeyId))?.status).toBe('suspended');
    await visit(site, APPLE(5));
    await work();
    const [v] = await env.db<{ pages: number }>`select pages_viewed as pages from visitors where website_id = ${site.websiteId}`;
    expect(v?.pages).toBe(1);
    expect(await identification(site, APPLE(5))).toEqual([]);
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 0 });
  });

  it('drops an identification queued before the child was suspended, using nothing', async () => {
    const site = await child();
    await visit(site, APPLE(6));
    await aggregateTrackerEvents({ ctx: env.deps, input: {} }); // queued, not yet identified
    await env.db`update api_keys set status = 'suspended', suspended_reason = 'manual' where id = ${site.apiKeyId}`;
    const report = await identifyVisitors({ ctx: env.deps, input: {} });
    expect(report.dropped).toBeGreaterThanOrEqual(1);
    expect(await identification(site, APPLE(6))).toEqual([]);
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 0 });
  });

  it('asks no paid provider for a child that could not use an ID (paused: no quota, no top-up), then does once it can', async () => {
    const site = await child({ monthly_id_quota: 0 });
    await visit(site, UNASKED);
    const report = await work();
    expect(report.identifications).toMatchObject({ identified: 0, dropped: 1 });
    expect(sap.calls).not.toContain(UNASKED);
    expect(await identification(site, UNASKED)).toEqual([]);
    await env.db`update child_subscriptions set monthly_id_quota = 1 where api_key_id = ${site.apiKeyId}`;
    await visit(site, UNASKED, { session: 'funded' });
    await work();
    expect(sap.calls).toContain(UNASKED);
    expect(await identification(site, UNASKED)).toEqual([expect.objectContaining({ status: 'identified', domain: 'sap.com' })]);
  });

  it('suspends the child with the identification that uses its last ID, once', async () => {
    const site = await child({ monthly_id_quota: 2 });
    for (const n of [10, 11, 12]) await visit(site, APPLE(n));
    const report = await work();
    expect(report.identifications).toMatchObject({ identified: 2, dropped: 1 });
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 2, status: 'suspended' });
    expect(names(await eventsOf(env.db, site.apiKeyId)).filter((n) => n === 'child.suspended')).toHaveLength(1);
  });

  it('draws a partner’s own direct tracker on the pool', async () => {
    const own = await seedDirectKey(env.deps, partner.account_id);
    const [before] = await env.db<{ used: number }>`select ids_used_this_period as used from pools where account_id = ${partner.account_id}`;
    const [site] = await env.db<{ domain: string }>`select domain from websites where id = ${own.website_id}`;
    const direct: Site = {
      key: own.key,
      apiKeyId: own.api_key_id,
      trackingId: own.tracking_script_id,
      domain: site?.domain ?? '',
      websiteId: own.website_id,
    };
    await visit(direct, APPLE(21));
    await work();
    const [after] = await env.db<{ used: number }>`select ids_used_this_period as used from pools where account_id = ${partner.account_id}`;
    expect((after?.used ?? 0) - (before?.used ?? 0)).toBe(1);
    expect(await identification(direct, APPLE(21))).toEqual([expect.objectContaining({ status: 'identified' })]);
  });

  it('takes over a claim whose worker died, and settles each identification once', async () => {
    const site = await child();
    await visit(site, APPLE(30));
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    // A worker claims, then dies before settling.
    await env.db`select * from sl_claim_identifications(100, 300)`;
    expect((await identifyVisitors({ ctx: env.deps, input: {} })).identified).toBe(0);
    await new Promise((r) => setTimeout(r, 400));
    expect((await identifyVisitors({ ctx: env.deps, input: {} })).identified).toBe(1);
    const [id] = await env.db<{ id: string }>`select id from identifications where website_id = ${site.websiteId}`;
    const [again] = await env.db<{ outcome: string }>`
      select outcome from sl_settle_identification(${id?.id ?? ''}::uuid, '{"status":"identified"}'::jsonb, null, '7 days')`;
    expect(again?.outcome).toBe('settled');
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 1 });
  });

  it('starts the worker after each stored beacon, so a visit is identified without waiting for the sweep', async () => {
    const kicked = await createTestEnv({ ip: realIpDeps(), trackerKick: true });
    try {
      const p = await seedPartner(kicked.deps, { quota: 10 });
      const c = await createChildVia(kicked, p.key, { domain: uniqueDomain('kick'), monthly_id_quota: 5 });
      await kicked.app.request(
        fn('collect'),
        {
          method: 'POST',
          headers: { 'content-type': 'text/plain', 'user-agent': 'Mozilla/5.0 Firefox/130.0' },
          body: JSON.stringify({
            tracking_script_id: c.website.tracking_script_id,
            type: 'pageview',
            url: `https://${c.website.domain}/`,
            session_id: 'k',
          }),
        },
        socketPeer(APPLE(40)),
      );
      await kicked.settle();
      const [row] = await kicked.db<{ status: string }>`select status from identifications where website_id = ${c.website.id}`;
      expect(row?.status).toBe('identified');
    } finally {
      await kicked.close();
    }
  });
});

describe('one claim, one read', () => {
  const BERLIN = (n: number) => `194.39.131.${n}`;

  it('queues each visitor of a claim holding several keys in its own key’s period', async () => {
    const [a, b] = [await child(), await child()];
    await env.db`update child_subscriptions set current_period_start = now() - interval '3 days', current_period_end = now() + interval '27 days'
                 where api_key_id = ${b.apiKeyId}`;
    for (const n of [40, 41]) await visit(a, APPLE(n));
    for (const n of [42, 43]) await visit(b, APPLE(n));
    expect((await aggregateTrackerEvents({ ctx: env.deps, input: {} })).claims).toBe(1);
    const rows = await env.db<{ key: string; queued: string; period: string }>`
      select i.api_key_id as key, i.period_start::text as queued, s.current_period_start::text as period
      from identifications i join child_subscriptions s on s.api_key_id = i.api_key_id
      where i.website_id in (${a.websiteId}, ${b.websiteId})`;
    expect(rows).toHaveLength(4);
    for (const r of rows) expect(r.queued).toBe(r.period);
    expect(new Set(rows.map((r) => r.queued)).size).toBe(2);
  });

  it('answers from the account’s stored tracker results, read for the whole claim in one statement, and asks no provider for them', async () => {
    const site = await child();
    const [key] = await env.db<{ account_id: string }>`select account_id from api_keys where id = ${site.apiKeyId}`;
    const stored = (domain: string) =>
      JSON.stringify({
        ip: '',
        identified: true,
        traffic_type: 'business',
        domain,
        company_name: `${domain} GmbH`,
        confidence: 0.9,
        reason: 'stored',
        vpn_provider: null,
        country_code: 'DE',
      });
    // Stored for this account: one live result, one expired; another account's result for a third address.
    await env.db`
      insert into ip_cache (account_id, operation, ip, result, created_at, expires_at) values
        (${key?.account_id ?? ''}, 'tracker', ${BERLIN(20)}::inet, ${stored('kept.example')}::text::jsonb, now(), now() + interval '1 day'),
        (${key?.account_id ?? ''}, 'tracker', ${BERLIN(21)}::inet, ${stored('expired.example')}::text::jsonb, now() - interval '8 days', now() - interval '1 day'),
        (${partner.account_id}, 'tracker', ${BERLIN(22)}::inet, ${stored('other-account.example')}::text::jsonb, now(), now() + interval '1 day')`;
    for (const n of [20, 21, 22]) await visit(site, BERLIN(n));
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    const asked = sap.calls.length;
    const { ctx, seen } = countingStatements(env.deps, ['ip_cache']);
    const report = await identifyVisitors({ ctx, input: {} });
    expect(report.claims).toBe(1);
    expect(seen.ip_cache).toBe(1);
    expect(await identification(site, BERLIN(20))).toEqual([expect.objectContaining({ status: 'identified', domain: 'kept.example' })]);
    // The expired result and the other account's are not this account's answer: the providers were asked (and did not know them).
    expect(sap.calls.slice(asked).sort()).toEqual([BERLIN(21), BERLIN(22)]);
    expect(await identification(site, BERLIN(21))).toEqual([expect.objectContaining({ status: 'failed' })]);
    expect(await identification(site, BERLIN(22))).toEqual([expect.objectContaining({ status: 'failed' })]);
  });

  it('settles a claim’s visitors of one key in one statement: a lane takes its next visitor without waiting for the last one’s commit', async () => {
    const site = await child({ monthly_id_quota: 50 });
    for (let n = 60; n < 80; n++) await visit(site, APPLE(n));
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    const { ctx, seen } = countingStatements(env.deps, ['sl_settle_identifications']);
    // Twenty visitors, eight lanes: lanes that waited for each commit sent a statement per round of eight.
    expect(await identifyVisitors({ ctx, input: {} })).toMatchObject({ identified: 20, claims: 1 });
    expect(seen.sl_settle_identifications).toBe(1);
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 20 });
  });

  it('stops at a claim short of a full batch', async () => {
    const site = await child();
    for (const n of [50, 51, 52]) await visit(site, APPLE(n));
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    const { ctx, seen } = countingStatements(env.deps, ['sl_claim_identifications']);
    expect(await identifyVisitors({ ctx, input: { batchSize: 2 } })).toMatchObject({ identified: 3, claims: 2 });
    expect(seen.sl_claim_identifications).toBe(2);
  });

  it('asks once per claim and key whether the key can use an ID, before the first paid lookup', async () => {
    const [a, b] = [await child(), await child()];
    for (const n of [30, 31, 32]) await visit(a, BERLIN(n));
    for (const n of [33, 34]) await visit(b, BERLIN(n));
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    const { ctx, seen } = countingStatements(env.deps, ['sl_can_identify']);
    const report = await identifyVisitors({ ctx, input: {} });
    expect(report.claims).toBe(1);
    expect(report.failed).toBe(5);
    expect(seen.sl_can_identify).toBe(2);
  });
});

describe('settling in batches', () => {
  const apple = (domain = 'apple.com') => ({
    status: 'identified',
    traffic_type: 'business',
    reason: 'The network is Apple Inc.’s own.',
    confidence: 0.95,
    country: 'US',
    identification_type: 'company',
    domain,
    company_name: 'Apple Inc.',
  });
  async function queued(site: Site, ips: string[]) {
    for (const ip of ips) await visit(site, ip);
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    return env.db<{ id: string; ip: string }>`
      select id, host(ip) as ip from identifications where website_id = ${site.websiteId} and status = 'pending' order by ip`;
  }

  it('settles what is ready together, each as alone; a batch the database refuses is settled one by one, the bad one failing alone', async () => {
    const site = await child({ webhook_url: receiver.url, webhook_secret: 'child-secret-batches' });
    const rows = await queued(site, [APPLE(40), APPLE(41), APPLE(42), APPLE(43)]);
    expect(rows).toHaveLength(4);
    const settle = createIdentificationSettler(env.deps);
    const item = (row: { id: string; ip: string }, result: object) => ({ id: row.id, apiKeyId: site.apiKeyId, result, cache: null });
    const [a, b] = rows;
    const together = await Promise.all([
      settle(item(a as { id: string; ip: string }, apple())),
      settle(item(b as { id: string; ip: string }, apple())),
    ]);
    expect(together.map((r) => r.outcome)).toEqual(['consumed', 'consumed']);
    // A confidence past the column's CHECK: refused by the database, whatever the batch.
    const [c, d] = rows.slice(2) as { id: string; ip: string }[];
    const outcomes = await Promise.allSettled([
      settle(item(c as { id: string; ip: string }, { ...apple(), confidence: 7 })),
      settle(item(d as { id: string; ip: string }, apple())),
    ]);
    expect(outcomes[0]).toMatchObject({ status: 'rejected' });
    expect(warnings.at(-1)).toBe('identification settle batch refused; settling one by one');
    expect(outcomes[1]).toMatchObject({ status: 'fulfilled', value: { outcome: 'consumed', emitted: true } });
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 3 });
    const statuses = await env.db<{ ip: string; status: string }>`
      select host(ip) as ip, status from identifications where website_id = ${site.websiteId} order by ip`;
    expect(statuses).toEqual(rows.map((r) => ({ ip: r.ip, status: r.ip === (rows[2] as { ip: string }).ip ? 'pending' : 'identified' })));
    const [ledger] = await env.db<{ n: number }>`select count(*)::int as n from id_ledger where child_api_key_id = ${site.apiKeyId}`;
    expect(ledger?.n).toBe(3);
    expect(names(await eventsOf(env.db, site.apiKeyId)).filter((n) => n === 'visitor_identified')).toHaveLength(3);
    // The refused one is left pending, as it was: settled with a good result, it uses its ID.
    expect(await settle(item(c as { id: string; ip: string }, apple()))).toMatchObject({ outcome: 'consumed' });
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 4 });
  });

  it('a batch takes its IDs at once, and an identification named twice in it is settled and paid once', async () => {
    const site = await child();
    const rows = (await queued(site, [APPLE(60), APPLE(61), APPLE(62)])) as { id: string; ip: string }[];
    expect(rows).toHaveLength(3);
    const items = [...rows, rows[0]].map((r) => ({ id: r?.id, result: apple(), cache: null }));
    const settled = await env.db<{ outcome: string }>`
      select outcome from sl_settle_identifications(${JSON.stringify(items)}::text::jsonb, interval '7 days')`;
    expect(settled.map((r) => r.outcome).sort()).toEqual(['consumed', 'consumed', 'consumed', 'settled']);
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 3 });
    const [ledger] = await env.db<{ n: number }>`select count(*)::int as n from id_ledger where child_api_key_id = ${site.apiKeyId}`;
    expect(ledger?.n).toBe(3);
  });

  it('a batch points its visitors at their identifications in one statement, so the visitors’ statement triggers run once a batch, not once a settle', async () => {
    const site = await child();
    const rows = await queued(site, [APPLE(50), APPLE(51), APPLE(52), APPLE(53)]);
    expect(rows).toHaveLength(4);
    // A probe counting the UPDATE statements on visitors while the batch settles (list-visitors'
    // counts, 0034, are such a trigger: once per settle it was a third of the worker's time).
    await env.db`create table settle_probe (n integer)`;
    await env.db`create function settle_probe_count() returns trigger language plpgsql as $$
      begin insert into settle_probe values (1); return null; end $$`;
    await env.db`create trigger settle_probe after update on visitors for each statement execute function settle_probe_count()`;
    try {
      const items = rows.map((r) => ({ id: r.id, result: apple(), cache: null }));
      const settled = await env.db<{ outcome: string }>`
        select outcome from sl_settle_identifications(${JSON.stringify(items)}::text::jsonb, '7 days'::interval)`;
      expect(settled.map((s) => s.outcome)).toEqual(['consumed', 'consumed', 'consumed', 'consumed']);
      const [probe] = await env.db<{ n: number }>`select count(*)::int as n from settle_probe`;
      expect(probe?.n).toBe(1);
    } finally {
      await env.db`drop trigger settle_probe on visitors`;
      await env.db`drop function settle_probe_count()`;
      await env.db`drop table settle_probe`;
    }
    const pointed = await env.db<{ ip: string; same: boolean }>`
      select host(v.ip) as ip, v.identification_id = i.id as same
      from visitors v join identifications i on i.website_id = v.website_id and i.ip = v.ip
      where v.website_id = ${site.websiteId} order by v.ip`;
    expect(pointed).toEqual(rows.map((r) => ({ ip: r.ip, same: true })));
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 4 });
  });

  it('four workers settling the children of one pool at once count every ID once, without a deadlock', async () => {
    const sites = [await child({ monthly_id_quota: 30 }), await child({ monthly_id_quota: 30 }), await child({ monthly_id_quota: 30 })];
    const [poolBefore] = await env.db<{ used: number }>`select ids_used_this_period as used from pools where account_id = ${partner.account_id}`;
    // Interleaved, so each claim holds every key's identifications.
    for (let i = 0; i < 60; i++) await visit(sites[i % 3] as Site, APPLE(300 + i));
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    const warned = warnings.length;
    const reports = await Promise.all(Array.from({ length: 4 }, () => identifyVisitors({ ctx: env.deps, input: { batchSize: 6 } })));
    expect(reports.reduce((n, r) => n + r.identified, 0)).toBe(60);
    // No batch was refused: a batch holding two keys would hold the pool while waiting for the
    // other key's row, and deadlock with another worker's batch.
    expect(warnings.slice(warned)).toEqual([]);
    for (const site of sites) expect(await usage(site.apiKeyId)).toMatchObject({ used: 20 });
    const [poolAfter] = await env.db<{ used: number }>`select ids_used_this_period as used from pools where account_id = ${partner.account_id}`;
    expect((poolAfter?.used ?? 0) - (poolBefore?.used ?? 0)).toBe(60);
    const [ledger] = await env.db<{ n: number }>`
      select count(*)::int as n from id_ledger where child_api_key_id = any(${`{${sites.map((s) => s.apiKeyId).join(',')}}`}::uuid[])`;
    expect(ledger?.n).toBe(60);
  });
});

describe('200 concurrent first visits on a child with 50 IDs', () => {
  it('use exactly 50 IDs and suspend the child once', async () => {
    const site = await child({ monthly_id_quota: 50, webhook_url: receiver.url, webhook_secret: 'child-secret-200' });
    const [poolBefore] = await env.db<{ used: number }>`select ids_used_this_period as used from pools where account_id = ${partner.account_id}`;
    await Promise.all(Array.from({ length: 200 }, (_, i) => visit(site, APPLE(100 + i))));
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    // Four workers at once, as four replicas would run them, in small claims.
    const reports = await Promise.all(Array.from({ length: 4 }, () => identifyVisitors({ ctx: env.deps, input: { batchSize: 16 } })));
    expect(reports.reduce((n, r) => n + r.identified, 0)).toBe(50);
    expect(reports.reduce((n, r) => n + r.dropped, 0)).toBe(150);
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 50, status: 'suspended' });
    const [counts] = await env.db<{ identified: number; ledger: number }>`
      select (select count(*)::int from identifications where website_id = ${site.websiteId} and status = 'identified') as identified,
             (select count(*)::int from id_ledger where child_api_key_id = ${site.apiKeyId}) as ledger`;
    expect(counts).toEqual({ identified: 50, ledger: 50 });
    const events = names(await eventsOf(env.db, site.apiKeyId));
    expect(events.filter((n) => n === 'child.suspended')).toHaveLength(1);
    expect(events.filter((n) => n === 'visitor_identified')).toHaveLength(50);
    const [poolAfter] = await env.db<{ used: number }>`select ids_used_this_period as used from pools where account_id = ${partner.account_id}`;
    expect((poolAfter?.used ?? 0) - (poolBefore?.used ?? 0)).toBe(50);
    if (!usingPostgres) console.log('(embedded PGlite serialises the workers; run with DATABASE_URL for real concurrency)');
  });
});

describe('visitor_identified is written to the outbox only when the key has a webhook', () => {
  const childEvents = (apiKeyId: string) =>
    env.db<{ event: string; delivery_status: string }>`
      select event, delivery_status from events where child_api_key_id = ${apiKeyId} and destination = 'child'`;

  it('a key with no webhook identifies a visitor and uses its ID, and no event row is written', async () => {
    const site = await child();
    await visit(site, APPLE(60));
    const report = await work();
    expect(report.identifications).toMatchObject({ identified: 1 });
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 1 });
    expect(await identification(site, APPLE(60))).toEqual([expect.objectContaining({ status: 'identified' })]);
    expect(await childEvents(site.apiKeyId)).toEqual([]);
  });

  it('a key with a webhook gets one row, and it is delivered', async () => {
    const site = await child({ webhook_url: receiver.url, webhook_secret: 'child-secret-outbox' });
    const before = receiver.received.length;
    await visit(site, APPLE(61));
    await work();
    await env.settle();
    expect(await childEvents(site.apiKeyId)).toEqual([{ event: 'visitor_identified', delivery_status: 'delivered' }]);
    const sent = receiver.received.slice(before).filter((r) => r.body.includes(site.apiKeyId));
    expect(sent.map((r) => r.headers['x-service-event'])).toEqual(['visitor_identified']);
  });
});

describe('an IPv6 visitor is its /64', () => {
  /** Apple's own IPv6 network (AS714 in the shipped data): a business, US. */
  const APPLE6 = (net: number, host: number) => `2403:300:a01:${net.toString(16)}::${host.toString(16)}`;

  async function identificationsOf(site: Site) {
    return env.db<{ ip: string; unit: string; status: string }>`
      select host(ip) as ip, unit::text as unit, status from identifications where website_id = ${site.websiteId} order by created_at`;
  }

  it('60 addresses of one /64 use one ID and make one identification, which every one of them is listed with', async () => {
    const site = await child({ webhook_url: receiver.url, webhook_secret: 'child-secret-v6' });
    const addresses = Array.from({ length: 60 }, (_, i) => APPLE6(1, 0x100 + i));
    for (const ip of addresses) await visit(site, ip);
    const report = await work();
    expect(report.identifications).toMatchObject({ identified: 1, dropped: 0 });
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 1, status: 'active' });
    const rows = await identificationsOf(site);
    expect(rows).toEqual([{ ip: expect.any(String), unit: '2403:300:a01:1::/64', status: 'identified' }]);
    // The identification keeps the full address it was looked up by.
    expect(addresses).toContain(rows[0]?.ip);
    // An address of the /64 seen after it was identified shares it, and uses nothing.
    await visit(site, APPLE6(1, 0x200));
    await work();
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 1 });
    expect(await identificationsOf(site)).toHaveLength(1);
    // Each visitor is still its own address, and each is listed, with the /64's company.
    const listed = await env.app.request(fn('list-visitors'), { headers: { 'x-access-key': site.key } });
    const visitors = ((await listed.json()) as { visitors: { ip: string; domain: string; lookup_count: number }[] }).visitors;
    expect(visitors.map((v) => v.ip).sort()).toEqual([...addresses, APPLE6(1, 0x200)].sort());
    for (const v of visitors) expect(v).toMatchObject({ domain: 'apple.com', lookup_count: 1 });
    // One webhook, naming the address the identification was made for.
    await env.settle();
    const [event] = await env.db<{ ip: string }>`
      select body::jsonb -> 'data' ->> 'ip' as ip from events where child_api_key_id = ${site.apiKeyId} and event = 'visitor_identified'`;
    expect(event?.ip).toBe(rows[0]?.ip);
    expect(names(await eventsOf(env.db, site.apiKeyId)).filter((n) => n === 'visitor_identified')).toHaveLength(1);
  });

  it('two /64s are two identifications, and IPv4 addresses stay one each', async () => {
    const site = await child();
    for (const ip of [APPLE6(2, 1), APPLE6(2, 2), APPLE6(3, 1), APPLE(70), APPLE(71)]) await visit(site, ip);
    const report = await work();
    expect(report.identifications).toMatchObject({ identified: 4 });
    expect(await usage(site.apiKeyId)).toMatchObject({ used: 4 });
    expect((await identificationsOf(site)).map((r) => r.unit).sort()).toEqual(
      ['2403:300:a01:2::/64', '2403:300:a01:3::/64', `${APPLE(70)}/32`, `${APPLE(71)}/32`].sort(),
    );
  });
});
