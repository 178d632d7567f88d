import { crc32 } from 'node:zlib';
import {
  type Database,
  type FunctionDefinition,
  findKeyRecord,
  grantCredits,
  type IpProvider,
  isWellFormedApiKey,
  policies,
  randomBase62,
  sweepWebhookDeliveries,
  workTrackerQueue,
} from '@sightline/core';
import { createHostApp } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allFunctions } from '../functions/index.ts';
import { call, createTestEnv, fn, type Json, TEST_SECRET, type TestEnv } from './support/app.ts';
import { createIcpVia, type IcpAccount, icpAction, seedIcpAccount } from './support/icps.ts';
import { realIpDeps } from './support/ip.ts';
import { capturingLogger } from './support/log.ts';
import { startReceiver } from './support/receiver.ts';
import { isPartnerRoute } from './support/routes.ts';
import { createChildVia, seedDirectKey, seedPartner, seedPartnerWithChild } from './support/seed.ts';
import { refusalProbe } from './support/snapshot.ts';
import { pageView } from './support/tracker.ts';
import { seedConnectedUser, userHeaders } from './support/users.ts';
import { seedIdentifiedVisitor } from './support/visitors.ts';

/**
 * Issue 15 §3, the tenancy and input cases in one place: every endpoint that takes an id, called by
 * another partner or account with an id that is not theirs, is refused with the spec's 403 (a
 * resource of another partner or user) and writes nothing — except identification-list, whose
 * website of another account is a 404 as for one that does not exist, and the listings whose filter
 * the spec answers with an empty list; text shaped like SQL injection or at Unicode's edges is stored and returned exactly as
 * sent. (A search term taken as text, not a pattern, is shown over real visitors in
 * visitor-listings.test.ts; bodies and headers over their limits in contract and node-server tests.)
 */
let env: TestEnv;
let reading: () => Promise<string>;

interface Partner {
  key: string;
  account_id: string;
  child: string;
  website: string;
  direct: string;
  event: string;
}
let a: Partner;
let b: Partner;
let x: IcpAccount & { icp_id: string };
let y: IcpAccount;

/** A partner with a child (support/seed.ts), a direct key of its own and its first event: one tenant. */
async function tenant(name: string): Promise<Partner> {
  const { partner: p, created: c } = await seedPartnerWithChild(env, { name, quota: 1_000, topup: 100 }, { monthly_id_quota: 10 });
  const direct = await seedDirectKey(env.deps, p.account_id);
  const [event] = await env.db<{ id: string }>`
    select e.id from events e where e.partner_account_id = ${p.account_id} order by e.created_at limit 1`;
  if (!event) throw new Error('creating a child made no event');
  return { key: p.key, account_id: p.account_id, child: c.child.api_key_id, website: c.website.id, direct: direct.api_key_id, event: event.id };
}

beforeAll(async () => {
  // Reports written at once, so waiting for background work does not wait out their gathering.
  env = await createTestEnv({ reportFlushMs: 0 });
  a = await tenant('Partner A');
  b = await tenant('Partner B');
  const xa = await seedIcpAccount(env);
  x = { ...xa, icp_id: String((await createIcpVia(env, xa)).id) };
  y = await seedIcpAccount(env);
  reading = await refusalProbe(env.db);
}, 60_000);
afterAll(() => env.close());

interface Case {
  name: string;
  /** Another tenant's request, naming a resource of A (or X). */
  send: () => ReturnType<typeof call>;
  status: number;
  error: RegExp;
}

const cases = (): Case[] => [
  // Partner endpoints: a resource of another partner's child is 403 (spec, Authentication rule 4).
  {
    name: 'partner-update-child',
    send: () => call(env, 'partner-update-child', { key: b.key, body: { child_api_key_id: a.child, name: 'taken' } }),
    status: 403,
    error: /another partner/,
  },
  {
    name: 'partner-rotate-child-key',
    send: () => call(env, 'partner-rotate-child-key', { key: b.key, body: { child_api_key_id: a.child } }),
    status: 403,
    error: /another partner/,
  },
  {
    name: 'partner-transfer-topup',
    send: () => call(env, 'partner-transfer-topup', { key: b.key, body: { child_api_key_id: a.child, amount: 1 } }),
    status: 403,
    error: /another partner/,
  },
  {
    name: 'partner-release-child',
    send: () => call(env, 'partner-release-child', { key: b.key, body: { child_api_key_id: a.child } }),
    status: 403,
    error: /another partner/,
  },
  {
    name: 'partner-adopt-existing-key',
    send: () => call(env, 'partner-adopt-existing-key', { key: b.key, body: { api_key_id: a.direct, name: 'taken' } }),
    status: 403,
    error: /different user|another/,
  },
  {
    name: 'partner-replay-event',
    send: () => call(env, 'partner-replay-event', { key: b.key, body: { event_id: a.event } }),
    status: 403,
    error: /another partner/,
  },
  // Account endpoints: another account's website, ICP or product.
  {
    name: 'identification-list',
    send: () => call(env, '/identification-list', { key: y.key, query: { website_id: x.website_id } }),
    status: 404,
    error: /website/,
  },
  {
    name: 'api-icp-action (an ICP)',
    send: () => icpAction(env, y, { action: 'approve_icp', icp_id: x.icp_id }),
    status: 403,
    error: /another account/,
  },
  {
    name: 'api-icp-action (a product)',
    send: () => icpAction(env, y, { action: 'update_product', product_id: x.product_id, name: 'taken' }),
    status: 403,
    error: /another account/,
  },
  {
    name: 'api-full-request (a product)',
    send: () =>
      call(env, 'api-full-request', {
        key: y.key,
        body: { prospect_url: 'https://www.linkedin.com/in/jane-doe', product_id: x.product_id, research_summary: 'r' },
        headers: userHeaders(y.user_id, crypto.randomUUID()),
      }),
    status: 403,
    error: /another account/,
  },
  // Connected-user endpoints: a user of another account (spec rule 2).
  {
    name: 'api-account-status',
    send: () => call(env, 'api-account-status', { key: y.key, method: 'POST', headers: userHeaders(x.user_id) }),
    status: 403,
    error: /not a user connected/,
  },
  {
    name: 'api-usage-summary',
    send: () => call(env, 'api-usage-summary', { key: y.key, body: { period: 'all' }, headers: userHeaders(x.user_id) }),
    status: 403,
    error: /not a user connected/,
  },
  {
    name: 'api-update-settings',
    send: () => call(env, 'api-update-settings', { key: y.key, body: { auto_reload_threshold: 5 }, headers: userHeaders(x.user_id) }),
    status: 403,
    error: /not a user connected/,
  },
];

describe('another tenant’s ids', () => {
  it.each(cases().map((c) => [c.name, c] as const))('%s: refused as the spec says, and nothing is written', async (_name, c) => {
    const before = await reading();
    const res = await c.send();
    expect(res.status, JSON.stringify(res.body)).toBe(c.status);
    expect(res.body.success).toBe(false);
    expect(String(res.body.error)).toMatch(c.error);
    await env.settle();
    expect(await reading()).toBe(before);
  });
});

describe('a released child’s key', () => {
  /**
   * After partner-release-child the former customer still holds the key in plaintext, and it is a
   * direct tracker in the partner's account. Its tracker keeps working and it reads its own website;
   * it is no key to the partner's account (docs/decisions/keys.md, "Key scope"). Every endpoint that
   * takes a key is called with it, aimed at the partner's account where it names anything — the
   * partner's own website, a user connected to the partner, the partner's credits — and each answer
   * is checked: refused as the table says, writing nothing and, for a refusal of the key itself, not
   * even counting the call.
   */
  let partner: Awaited<ReturnType<typeof seedPartner>>;
  let own: Awaited<ReturnType<typeof seedDirectKey>>;
  let released: Awaited<ReturnType<typeof createChildVia>>;
  let partnerUser = '';
  /** An account-wide traffic rule of the partner's, which the released key may not remove. */
  let partnerRule = '';
  /** An account-wide integration of the partner's, which the released key may neither see nor change. */
  let partnerIntegration = '';
  const CUSTOMER_VISITOR = '17.253.2.2';
  const PARTNER_VISITOR = '17.253.1.1';

  beforeAll(async () => {
    partner = await seedPartner(env.deps, { name: 'Releasing partner', quota: 1_000, topup: 10 });
    own = await seedDirectKey(env.deps, partner.account_id);
    released = await createChildVia(env, partner.key, { monthly_id_quota: 5 });
    // What a key to the account could take: credits to spend, a connected user to act as, visitors to read.
    await grantCredits({ ctx: env.deps, input: { accountId: partner.account_id, credits: 100 } });
    partnerUser = (await seedConnectedUser(env.db, partner.account_id)).user_id;
    const [rule] = await env.db<{ id: string }>`
      insert into traffic_rules (account_id, kind, value) values (${partner.account_id}, 'path', '/partner-only*') returning id::text as id`;
    partnerRule = rule?.id ?? '';
    const [integration] = await env.db<{ id: string }>`
      insert into integrations (account_id, kind, name, secret_sealed, signals)
      values (${partner.account_id}, 'hubspot', 'Partner CRM', ${await env.deps.keyring.seal('pat-partner-token')}, '{visitor_identified}')
      returning id::text as id`;
    partnerIntegration = integration?.id ?? '';
    await seedIdentifiedVisitor(env.db, { websiteId: own.website_id, apiKeyId: own.api_key_id }, PARTNER_VISITOR, 'Partner Visitor Co');
    const { identification_id } = await seedIdentifiedVisitor(
      env.db,
      { websiteId: released.website.id, apiKeyId: released.child.api_key_id },
      CUSTOMER_VISITOR,
      'Customer Visitor Co',
    );
    // The partner's own ICP has scored the released website's visitor: the partner's business, not the key holder's.
    await env.db`
      with product as (insert into products (account_id, name) values (${partner.account_id}, 'Partner product') returning id),
      icp as (
        insert into icps (account_id, product_id, name, description, workflow_status, review_status, engine)
        select ${partner.account_id}, id, 'Partner ICP', 'Who the partner sells to', 'active', 'approved', 'builtin' from product
        returning id)
      insert into icp_scores (identification_id, icp_id, score, qualified, ai_summary, website_id, listed_at)
      select ${identification_id}, icp.id, 90, true, 'A fit for the partner', i.website_id, i.created_at
      from icp, identifications i where i.id = ${identification_id}`;
    const res = await call(env, 'partner-release-child', { key: partner.key, body: { child_api_key_id: released.child.api_key_id } });
    expect(res.status).toBe(200);
  });

  const key = () => released.child.key;
  const SCOPED = /this key is scoped to its own websites and cannot act on the account/;
  /** What each endpoint that takes a credential answers the released key. */
  const expected = (def: FunctionDefinition): { send: () => ReturnType<typeof call>; status: number; error?: RegExp } => {
    // A function's address: under /functions/v1, or from the root ({api_url}).
    const at = def.mount === 'functions' ? def.name : `/${def.name}`;
    const asUser =
      (body: unknown, idempotent = false) =>
      () =>
        call(env, at, { key: key(), body, method: 'POST', headers: userHeaders(partnerUser, idempotent ? crypto.randomUUID() : undefined) });
    if (isPartnerRoute(def)) {
      return {
        send: () => call(env, at, { key: key(), method: def.method, body: def.method === 'POST' ? {} : undefined }),
        status: 403,
        error: /master/,
      };
    }
    if (def.policy === policies.sweep) return { send: () => call(env, at, { key: key(), method: 'POST' }), status: 401, error: /sweep token/ };
    const cases: Record<string, { send: () => ReturnType<typeof call>; status: number; error?: RegExp }> = {
      // The account's own acts: a link (whose user would act for the partner), and lookups on its credits.
      'api-create-connect-link': { send: () => call(env, at, { key: key(), method: 'POST' }), status: 403, error: SCOPED },
      'ip-to-company': { send: () => call(env, at, { key: key(), body: { ip: '17.253.144.10' } }), status: 403, error: SCOPED },
      'ip-to-best-fit': { send: () => call(env, at, { key: key(), body: { ip_address: '17.253.144.10' } }), status: 403, error: SCOPED },
      // Erasing from the account is acting on it: refused before anything is read.
      'api-erase-personal-data': { send: () => call(env, at, { key: key(), body: { ip: '17.253.144.10' } }), status: 403, error: SCOPED },
      // A user connected to the partner, through the released key: refused whoever the user is.
      'api-account-status': { send: asUser(undefined), status: 403, error: SCOPED },
      'api-usage-summary': { send: asUser({ period: 'all' }), status: 403, error: SCOPED },
      'api-update-settings': { send: asUser({ allowed_domains: ['evil.example.com'] }), status: 403, error: SCOPED },
      'api-full-request': {
        send: asUser({ prospect_url: 'https://www.linkedin.com/in/jane-doe', research_summary: 'r' }, true),
        status: 403,
        error: SCOPED,
      },
      'api-icp-action': { send: asUser({ action: 'list_icps' }, true), status: 403, error: SCOPED },
      // Reads: the partner's own website is answered as another account's.
      'identification-list': {
        send: () => call(env, at, { key: key(), query: { website_id: own.website_id } }),
        status: 404,
        error: /website/,
      },
      'list-visitors': { send: () => call(env, at, { key: key() }), status: 200 },
      // Its own visitors' rows only; a mark on the partner's own visitor is another account's: no such visitor.
      'visitors-export': { send: () => call(env, at, { key: key() }), status: 200 },
      // The partner's own visitor is another account's to this key: no such visitor.
      'visitor-activity': {
        send: async () => {
          const [w] = await env.db<{ domain: string }>`select domain from websites where id = ${own.website_id}`;
          return call(env, at, { key: key(), query: { tracker_site: w?.domain ?? '', ip: PARTNER_VISITOR } });
        },
        status: 404,
        error: /no such visitor/,
      },
      'visitor-mark': {
        send: async () => {
          const [w] = await env.db<{ domain: string }>`select domain from websites where id = ${own.website_id}`;
          return call(env, at, { key: key(), body: { tracker_site: w?.domain ?? '', ip: PARTNER_VISITOR, is_watched: true } });
        },
        status: 404,
        error: /no such visitor/,
      },
      // Its own websites' figures only (as list-visitors); the partner's pool is the account's, its brand no longer the key's.
      'visitor-stats': { send: () => call(env, at, { key: key() }), status: 200 },
      'key-usage': { send: () => call(env, at, { key: key() }), status: 403, error: SCOPED },
      'console-brand': { send: () => call(env, at, { key: key() }), status: 200 },
      // Traffic rules: its own websites' (none), never the partner's website or the partner's account-wide rule.
      'traffic-rules': { send: () => call(env, at, { key: key() }), status: 200 },
      'traffic-rule-create': {
        send: () => call(env, at, { key: key(), body: { website_id: own.website_id, kind: 'country', value: 'DE' } }),
        status: 404,
        error: /website/,
      },
      'traffic-rule-delete': { send: () => call(env, at, { key: key(), body: { id: partnerRule } }), status: 403, error: /account-wide/ },
      // Integrations: only those bound to its own websites (none); an account-wide one is the account's.
      integrations: { send: () => call(env, at, { key: key() }), status: 200 },
      'integration-create': {
        send: () => call(env, at, { key: key(), body: { kind: 'hubspot', name: 'x', token: 'pat-abcdefgh', signals: ['visitor_identified'] } }),
        status: 403,
        error: /scoped to its own websites/,
      },
      'integration-update': {
        send: () => call(env, at, { key: key(), body: { integration_id: partnerIntegration, name: 'taken' } }),
        status: 404,
        error: /integration/,
      },
      'integration-delete': {
        send: () => call(env, at, { key: key(), body: { integration_id: partnerIntegration } }),
        status: 404,
        error: /integration/,
      },
      'integration-deliveries': { send: () => call(env, at, { key: key(), query: { integration_id: partnerIntegration } }), status: 200 },
      'integration-delivery-replay': {
        send: () => call(env, at, { key: key(), body: { delivery_id: crypto.randomUUID() } }),
        status: 404,
        error: /no event/,
      },
    };
    const c = cases[def.name];
    if (!c) throw new Error(`no expectation for ${def.name} with a released key: add one`);
    return c;
  };
  const takesCredential = allFunctions.filter((f) => f.policy.security.length > 0);

  it('every endpoint but the key-less tracker and connect-link ones takes a credential, and each is probed below', () => {
    expect(
      allFunctions
        .filter((f) => !takesCredential.includes(f))
        .map((f) => f.name)
        .sort(),
    ).toEqual(['api-complete-connect-link', 'collect', 'connect', 't']);
  });

  it.each(takesCredential.map((f) => [f.name, f] as const))('%s: answers as the table says, and changes nothing', async (_name, def) => {
    const c = expected(def);
    const usage = async () => {
      await env.deps.usage.flush();
      const [row] = await env.db<{ n: number }>`select coalesce(sum(calls), 0)::int as n from usage_daily where account_id = ${partner.account_id}`;
      return row?.n;
    };
    const before = await reading();
    const calls = await usage();
    const res = await c.send();
    expect(res.status, JSON.stringify(res.body)).toBe(c.status);
    if (c.error) {
      expect(res.body.success).toBe(false);
      expect(String(res.body.error)).toMatch(c.error);
    }
    await env.settle();
    expect(await reading()).toBe(before);
    // A key refused as such is refused before the call is counted against the partner's account.
    if (c.status === 401 || (c.status === 403 && c.error === SCOPED)) expect(await usage()).toBe(calls);
  });

  it('lists only its own website’s visitors and identifications, without the partner’s ICP scores', async () => {
    const listed = await call(env, 'list-visitors', { key: key() });
    expect(listed.status).toBe(200);
    expect((listed.body.visitors as Json[]).map((v) => [v.ip, v.tracker_site])).toEqual([[CUSTOMER_VISITOR, released.website.domain]]);
    expect(listed.body.total).toBe(1);
    // Naming the partner's own tracker finds nothing, as for a domain that is not the key's.
    const [ownSite] = await env.db<{ domain: string }>`select domain from websites where id = ${own.website_id}`;
    const named = await call(env, 'list-visitors', { key: key(), query: { tracker_site: ownSite?.domain ?? '' } });
    expect(named.body).toMatchObject({ total: 0, visitors: [] });
    const ids = await call(env, '/identification-list', { key: key(), query: { website_id: released.website.id } });
    expect(ids.status).toBe(200);
    expect(ids.body.identifications).toEqual([expect.objectContaining({ status: 'identified', icp_scores: [] })]);
    const qualified = await call(env, '/identification-list', { key: key(), query: { website_id: released.website.id, qualified: 'true' } });
    expect(qualified.body.identifications).toEqual([]);
    // While the partner's master key sees its ICP's score on the same identification.
    const partnerView = await call(env, '/identification-list', { key: partner.key, query: { website_id: released.website.id } });
    expect(partnerView.body.identifications).toEqual([
      expect.objectContaining({ icp_scores: [expect.objectContaining({ icp_name: 'Partner ICP', score: 90, qualified: true })] }),
    ]);
    // The partner's master key sees its whole account: its own tracker and the released one.
    const stats = await call(env, 'visitor-stats', { key: key() });
    expect(stats.status).toBe(200);
    expect(JSON.stringify(stats.body)).not.toContain('Partner Visitor Co');
    // The partner's brand is for the customers it serves; a released key is no longer one.
    const brand = { brand_name: 'Releasing Agency', accent_color: '#224466', logo_url: 'https://agency.example.com/logo.png' };
    expect((await call(env, 'partner-set-brand', { key: partner.key, body: brand })).status).toBe(200);
    expect((await call(env, 'console-brand', { key: partner.key })).body).toMatchObject({ brand });
    expect((await call(env, 'console-brand', { key: key() })).body).toMatchObject({
      brand: { brand_name: null, accent_color: null, logo_url: null },
    });
    const master = await call(env, 'list-visitors', { key: partner.key });
    expect((master.body.visitors as Json[]).map((v) => v.ip).sort()).toEqual([PARTNER_VISITOR, CUSTOMER_VISITOR].sort());
    expect((await call(env, '/identification-list', { key: partner.key, query: { website_id: own.website_id } })).status).toBe(200);
  });

  it('leaves the partner’s master key acting on the account', async () => {
    expect((await call(env, 'api-create-connect-link', { key: partner.key, method: 'POST' })).status).toBe(201);
    const status = await call(env, 'api-account-status', { key: partner.key, method: 'POST', headers: userHeaders(partnerUser) });
    expect(status.status).toBe(200);
    expect(status.body.balance).toBe(100);
  });
});

/** Text a careless query, parser or comparison would mangle; every one is valid input. */
const EDGE_TEXT = [
  "Robert'); DROP TABLE accounts;--",
  "' OR '1'='1' --",
  '1; select pg_sleep(5)',
  '$$ || $1 || $$',
  '%_\\%\\_',
  'back\\slash "quote" `tick`',
  'e\u0301 vs é', // combining accent, then precomposed: not to be normalised into each other
  '\u202eRTL override',
  'zero\u200bwidth\ufeffBOM',
  '👩‍👩‍👧‍👦 family, 🏳️‍🌈 flag',
  '𝕳𝖊𝖑𝖑𝖔 (outside the BMP)',
  'İstanbul ß ǅ',
  'line\nbreak\ttab\r\nCRLF',
  'line\u2028separator\u2029paragraph',
];

describe('a listing filtered by another partner’s child', () => {
  // Spec: "`children` is empty if no match". The filter runs over the caller's own children, so
  // another partner's child is answered exactly as a child that does not exist: nothing leaks.
  it.each([
    ['partner-list-children', 'children'],
    ['partner-list-events', 'events'],
  ])('%s finds nothing, as for an id that does not exist', async (name, list) => {
    const before = await reading();
    const theirs = await call(env, name, { key: b.key, query: { child_api_key_id: a.child } });
    const nobody = await call(env, name, { key: b.key, query: { child_api_key_id: crypto.randomUUID() } });
    expect(theirs.status).toBe(200);
    expect(theirs.body[list]).toEqual([]);
    expect(theirs.body).toEqual(nobody.body);
    // While A's own filter finds its child's rows.
    const own = await call(env, name, { key: a.key, query: { child_api_key_id: a.child } });
    expect((own.body[list] as Json[]).length).toBeGreaterThan(0);
    await env.settle();
    expect(await reading()).toBe(before);
  });
});

describe('text fields keep exactly what was sent', () => {
  it.each(EDGE_TEXT.map((t) => [JSON.stringify(t), t] as const))('a child’s name %s', async (_label, text) => {
    const child = await createChildVia(env, a.key, { name: text });
    const listed = await call(env, 'partner-list-children', { key: a.key, query: { child_api_key_id: child.child.api_key_id } });
    expect(listed.status).toBe(200);
    expect((listed.body.children as Json[])[0]?.name).toBe(text);
    const renamed = `${text} (renamed)`;
    expect((await call(env, 'partner-update-child', { key: a.key, body: { child_api_key_id: child.child.api_key_id, name: renamed } })).status).toBe(
      200,
    );
    const again = await call(env, 'partner-list-children', { key: a.key, query: { child_api_key_id: child.child.api_key_id } });
    expect((again.body.children as Json[])[0]?.name).toBe(renamed);
  });

  it('a product’s name, description and lists, every edge string at once', async () => {
    const fields = {
      name: EDGE_TEXT[0],
      description: EDGE_TEXT.join(' | '),
      value_propositions: EDGE_TEXT.slice(0, 7),
      target_customers: EDGE_TEXT.slice(7),
    };
    const created = await icpAction(env, y, { action: 'create_product', ...fields });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const listed = await icpAction(env, y, { action: 'list_products' });
    const product = (listed.body.data as Json[]).find((p) => p.name === fields.name);
    expect(product).toMatchObject(fields);
  });

  it('an ICP’s name, description and lists, every edge string at once', async () => {
    const fields = {
      name: EDGE_TEXT[1],
      description: EDGE_TEXT.join(' | '),
      job_titles: EDGE_TEXT.slice(0, 5),
      pain_points: EDGE_TEXT.slice(5, 10),
      value_drivers: EDGE_TEXT.slice(10),
      industry_focus: [EDGE_TEXT[4] as string],
    };
    const created = await icpAction(env, y, { action: 'create_icp', product_id: y.product_id, ...fields });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject(fields);
    const listed = await icpAction(env, y, { action: 'list_icps' });
    expect((listed.body.data as Json[]).find((i) => i.id === created.body.id)).toMatchObject(fields);
  });
});

describe('what the logs never hold', () => {
  const EU_VISITOR = '194.39.131.1'; // Germany, in the shipped country data
  const { log: capture, lines } = capturingLogger();
  // A provider that fails the way an HTTP client does, naming the address in its message.
  const failing: IpProvider = {
    name: 'failing',
    lookup: async (ip) => {
      throw new Error(`GET https://provider.example/${ip}/json failed: socket hang up`);
    },
  };
  let logged: TestEnv;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  afterAll(async () => {
    await logged?.close();
    await receiver?.close();
  });

  it('keys, webhook secrets and an EU visitor’s address appear in no log line, through every path that logs', async () => {
    logged = await createTestEnv({ log: capture, ip: realIpDeps({ providers: [failing], timeoutMs: 200 }) });
    receiver = await startReceiver((_req, res) => {
      res.statusCode = 500;
      res.end('down');
    });
    const partner = await seedPartner(logged.deps, { quota: 100 });
    const childSecret = `child-secret-${crypto.randomUUID()}`;
    const partnerSecret = `partner-secret-${crypto.randomUUID()}`;
    const child = await createChildVia(logged, partner.key, { monthly_id_quota: 10, webhook_url: receiver.url, webhook_secret: childSecret });
    const rotated = await call(logged, 'partner-rotate-child-key', { key: partner.key, body: { child_api_key_id: child.child.api_key_id } });
    expect(rotated.status).toBe(200);
    const newKey = String(rotated.body.key);
    expect((await call(logged, 'partner-set-webhook', { key: partner.key, body: { url: receiver.url, secret: partnerSecret } })).status).toBe(200);
    // The EU visitor: a page view, identified by the worker, and a direct lookup the account pays for.
    const [owner] = await logged.db<{ account_id: string }>`select account_id from api_keys where id = ${child.child.api_key_id}`;
    await grantCredits({ ctx: logged.deps, input: { accountId: String(owner?.account_id), credits: 50 } });
    const site = {
      key: newKey,
      apiKeyId: child.child.api_key_id,
      trackingId: child.website.tracking_script_id,
      domain: child.website.domain,
      websiteId: child.website.id,
    };
    await pageView(logged, site, EU_VISITOR);
    await workTrackerQueue({ ctx: logged.deps, input: {} });
    const lookup = await call(logged, 'ip-to-company', { key: newKey, body: { ip: EU_VISITOR } });
    expect(lookup.status, JSON.stringify(lookup.body)).toBe(200);
    // Deliveries fail at the receiver and are retried; then an unexpected failure mid-request.
    await logged.settle();
    await sweepWebhookDeliveries({ ctx: logged.deps, input: { now: new Date(Date.now() + 3_600_000) } });
    const broken = createHostApp({
      ...logged.deps,
      authCache: undefined,
      db: Object.assign(() => Promise.reject(new Error('connection terminated unexpectedly')), logged.db) as unknown as Database,
    });
    const failed = await broken.request(fn('ip-to-company'), {
      method: 'POST',
      headers: { 'x-access-key': newKey, 'content-type': 'application/json' },
      body: JSON.stringify({ ip: EU_VISITOR }),
    });
    expect(failed.status).toBe(500);
    await logged.settle();

    // The paths above did log (so the search below reads something), and none of it is a secret.
    const log = lines.map((l) => JSON.stringify(l)).join('\n');
    expect(log).toMatch(/unhandled error/);
    expect(receiver.received.length).toBeGreaterThan(0);
    for (const secret of [partner.key, child.child.key, newKey, childSecret, partnerSecret, EU_VISITOR, TEST_SECRET]) {
      expect(log.includes(secret), `the log holds ${secret.slice(0, 12)}…`).toBe(false);
    }
  });
});

describe('key verification and how much of a key matches', () => {
  const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  /** A well-formed key (its checksum right, so it reaches the lookup) sharing `shared` random characters with `key`. */
  function nearKey(key: string, shared: number): string {
    let random = key.slice(3, 3 + shared) + randomBase62(32 - shared);
    // One random character left is the key's own one time in 62: the near key must not be the key.
    while (random === key.slice(3, 35)) random = key.slice(3, 3 + shared) + randomBase62(32 - shared);
    let n = crc32(Buffer.from(random));
    let check = '';
    for (let i = 0; i < 6; i++) {
      check = BASE62[n % 62] + check;
      n = Math.floor(n / 62);
    }
    const formed = `sl_${random}${check}`;
    expect(isWellFormedApiKey(formed)).toBe(true);
    return formed;
  }

  it('looks a key up by its keyed digest alone: the database never sees the key, and near keys share no digest prefix', async () => {
    const partner = await seedPartner(env.deps, { name: 'Timing partner' });
    const seen: unknown[][] = [];
    const recording = Object.assign((strings: TemplateStringsArray, ...values: unknown[]) => {
      seen.push(values);
      return (env.db as unknown as (s: TemplateStringsArray, ...v: unknown[]) => Promise<unknown>)(strings, ...values);
    }, env.db) as unknown as Database;
    const ctx = { ...env.deps, db: recording, authCache: undefined };
    await expect(findKeyRecord({ ctx, input: { key: partner.key } })).resolves.toMatchObject({ accountId: partner.account_id });
    const near = nearKey(partner.key, 31);
    await expect(findKeyRecord({ ctx, input: { key: near } })).rejects.toMatchObject({ status: 401 });
    const digests = [await env.deps.keyring.hashApiKey(partner.key), await env.deps.keyring.hashApiKey(near)];
    expect(seen).toEqual([[digests[0]], [digests[1]]]);
    expect(JSON.stringify(seen)).not.toContain(partner.key.slice(3, 20));
    // 31 of 32 random characters alike, and the digests part at once: nothing to compare a prefix of.
    let common = 0;
    while (digests[0]?.[common] === digests[1]?.[common]) common++;
    expect(common).toBeLessThan(4);
  });

  it('takes as long for a key that matches all but its last character as for one that matches none', async () => {
    const partner = await seedPartner(env.deps, { name: 'Timing partner 2' });
    const ctx = { ...env.deps, authCache: undefined };
    const groups = [0, 16, 31].map((shared) => ({ shared, times: [] as number[] }));
    // Interleaved, so drift in the machine's speed falls on every group alike.
    for (let round = 0; round < 150; round++) {
      for (const g of groups) {
        const key = nearKey(partner.key, g.shared);
        const started = performance.now();
        await findKeyRecord({ ctx, input: { key } }).catch(() => undefined);
        g.times.push(performance.now() - started);
      }
    }
    const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)] ?? 0;
    const medians = groups.map((g) => median(g.times));
    expect(Math.max(...medians) / Math.min(...medians), `medians ${medians.map((m) => m.toFixed(3)).join(' / ')} ms`).toBeLessThan(1.5);
  });
});
