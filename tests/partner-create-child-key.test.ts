import { authenticateKey, isWellFormedApiKey } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { closedPort, startReceiver } from './support/receiver.ts';
import { seedDirectAccount, seedPartner, uniqueDomain } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';

let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  env = await createTestEnv();
  partner = await seedPartner(env.deps, { quota: 100 });
  receiver = await startReceiver((_req, res) => {
    // A webhook receiver that only accepts POST is still reachable.
    res.statusCode = 405;
    res.end();
  });
});
afterAll(async () => {
  await receiver.close();
  await env.close();
});

const create = (body: unknown, key = partner.key) => call(env, 'partner-create-child-key', { key, body });

describe('partner-create-child-key: success', () => {
  it('provisions phantom user, key, website and a 30-day trial subscription (201, exact body)', async () => {
    const domain = uniqueDomain('shop');
    const before = Date.now();
    const res = await create({ name: 'Acme Shop', domain, monthly_id_quota: 250 });
    expect(res.status).toBe(201);
    const b = res.body as Json & { child: Json; website: Json; subscription: Json; billing: Json; webhook: Json };
    expect(Object.keys(b).sort()).toEqual(['billing', 'child', 'subscription', 'success', 'webhook', 'website']);
    expect(b.success).toBe(true);
    expect(Object.keys(b.child).sort()).toEqual(['api_key_id', 'child_user_id', 'key', 'key_prefix', 'name', 'status']);
    expect(b.child).toMatchObject({ name: 'Acme Shop', status: 'active' });
    expect(isWellFormedApiKey(b.child.key as string)).toBe(true);
    expect((b.child.key as string).startsWith(b.child.key_prefix as string)).toBe(true);
    expect(b.website).toMatchObject({ domain });
    expect(Object.keys(b.website).sort()).toEqual(['domain', 'id', 'tracking_script_id']);
    expect(b.subscription).toMatchObject({ kind: 'trial_child', monthly_id_quota: 250, status: 'active', id_price_pence_override: null });
    const end = Date.parse(b.subscription.current_period_end as string);
    expect(end - before).toBeGreaterThanOrEqual(30 * 86400_000 - 1000);
    expect(end - Date.now()).toBeLessThanOrEqual(30 * 86400_000 + 1000);
    expect(b.billing).toEqual({
      status: 'trial',
      payment_subscription_item_id: null,
      payment_subscription_id: null,
      error: null,
      advance_charge_pi_id: null,
    });
    expect(b.webhook).toEqual({ url: null, secret: null });

    const [phantom] = await env.db<{ is_phantom: boolean; is_partner: boolean }>`
      select is_phantom, is_partner from accounts where id = ${b.child.child_user_id as string}`;
    expect(phantom).toEqual({ is_phantom: true, is_partner: false });
    const [key] = await env.db<{ parent_api_key_id: string; brand_name: string; status: string }>`
      select parent_api_key_id, brand_name, status from api_keys where id = ${b.child.api_key_id as string}`;
    expect(key).toEqual({ parent_api_key_id: partner.api_key_id, brand_name: 'Acme Shop', status: 'active' });
  });

  it('returns a key that authenticates, while only its keyed hash is stored', async () => {
    const res = await create({ name: 'Hashed', domain: uniqueDomain() });
    const child = res.body.child as { key: string; api_key_id: string };
    const caller = await authenticateKey({ ctx: env.deps, input: { key: child.key } });
    expect(caller.apiKeyId).toBe(child.api_key_id);
    const [dump] = await env.db<{ t: string }>`select string_agg(to_jsonb(k)::text, '') as t from api_keys k`;
    expect(dump?.t).not.toContain(child.key);
    expect(dump?.t).not.toContain(child.key.slice(11));
  });

  it('writes child.created to the outbox in the same transaction, with the spec’s data', async () => {
    const domain = uniqueDomain();
    const res = await create({ name: 'Evented', domain, monthly_id_quota: 5 });
    const child = res.body.child as { api_key_id: string; child_user_id: string };
    const website = res.body.website as { tracking_script_id: string };
    const sub = res.body.subscription as { current_period_end: string };
    const events = await env.db<{ event: string; body: string; partner_account_id: string; delivery_status: string }>`
      select event, body, partner_account_id, delivery_status from events where child_api_key_id = ${child.api_key_id}`;
    expect(events).toHaveLength(1);
    const [e] = events;
    expect(e?.event).toBe('child.created');
    expect(e?.partner_account_id).toBe(partner.account_id);
    // This partner has no webhook: the event is kept, and never sent.
    expect(e?.delivery_status).toBe('no_destination');
    const envelope = JSON.parse(e?.body ?? '{}') as { event: string; timestamp: string; data: Json };
    expect(envelope.event).toBe('child.created');
    expect(Number.isNaN(Date.parse(envelope.timestamp))).toBe(false);
    expect(envelope.data).toEqual({
      child_api_key_id: child.api_key_id,
      child_user_id: child.child_user_id,
      name: 'Evented',
      domain,
      tracking_script_id: website.tracking_script_id,
      monthly_id_quota: 5,
      current_period_end: sub.current_period_end,
      sub_status: 'active',
      has_webhook: false,
    });
  });

  it('defaults monthly_id_quota to 0 and brand_name to name; folds domain case', async () => {
    const domain = uniqueDomain('Case').toUpperCase();
    const res = await create({ name: 'Defaults', domain });
    expect(res.status).toBe(201);
    expect((res.body.subscription as Json).monthly_id_quota).toBe(0);
    expect((res.body.website as Json).domain).toBe(domain.toLowerCase());
    const [key] = await env.db<{ brand_name: string }>`
      select brand_name from api_keys where id = ${(res.body.child as Json).api_key_id as string}`;
    expect(key?.brand_name).toBe('Defaults');
  });

  it('stores brand_name when given', async () => {
    const res = await create({ name: 'Inner', domain: uniqueDomain(), brand_name: 'Outer Brand' });
    const [key] = await env.db<{ brand_name: string }>`
      select brand_name from api_keys where id = ${(res.body.child as Json).api_key_id as string}`;
    expect(key?.brand_name).toBe('Outer Brand');
  });

  it('mints a webhook secret when only webhook_url is given, returns it once and seals it at rest', async () => {
    const res = await create({ name: 'Hooked', domain: uniqueDomain(), webhook_url: receiver.url });
    expect(res.status).toBe(201);
    const webhook = res.body.webhook as { url: string; secret: string };
    expect(webhook.url).toBe(receiver.url);
    expect(webhook.secret).toMatch(/^whsec_[0-9A-Za-z]{40}$/);
    const [row] = await env.db<{ webhook_url: string; webhook_secret_sealed: string }>`
      select webhook_url, webhook_secret_sealed from api_keys where id = ${(res.body.child as Json).api_key_id as string}`;
    expect(row?.webhook_url).toBe(receiver.url);
    expect(row?.webhook_secret_sealed).not.toContain(webhook.secret);
    expect(await env.deps.keyring.open(row?.webhook_secret_sealed ?? '')).toBe(webhook.secret);
    // The reachability probe really went out, and posted nothing.
    expect(receiver.received.some((r) => r.method === 'HEAD')).toBe(true);
    expect(receiver.received.every((r) => r.body === '')).toBe(true);
    const [event] = await env.db<{ body: string }>`
      select body from events where child_api_key_id = ${(res.body.child as Json).api_key_id as string}`;
    expect((JSON.parse(event?.body ?? '{}') as { data: Json }).data.has_webhook).toBe(true);
  });

  it('uses the caller’s webhook_secret when given', async () => {
    const res = await create({ name: 'Own secret', domain: uniqueDomain(), webhook_url: receiver.url, webhook_secret: 'my-secret-123' });
    expect(res.status).toBe(201);
    expect(res.body.webhook).toEqual({ url: receiver.url, secret: 'my-secret-123' });
  });

  it('lets a monthly-invoice partner with a card, a rate and no outstanding invoice create children', async () => {
    const inv = await seedPartner(env.deps, { billing: 'invoice_monthly', quota: 0, card: 'pm_card_visa', perIdPence: 2.5 });
    const res = await create({ name: 'Invoiced', domain: uniqueDomain() }, inv.key);
    expect(res.status).toBe(201);
  });
});

describe('partner-create-child-key: rejected requests change nothing', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['name missing', { domain: 'ok.example.com' }, /name is required/],
    ['name blank', { name: '   ', domain: 'ok.example.com' }, /name is required/],
    ['domain missing', { name: 'x' }, /domain is required/],
    ['domain with scheme', { name: 'x', domain: 'https://example.com' }, /without a scheme/],
    ['domain with path', { name: 'x', domain: 'example.com/shop' }, /bare host/],
    ['domain with port', { name: 'x', domain: 'example.com:8080' }, /bare host/],
    ['domain without a dot', { name: 'x', domain: 'localhost' }, /bare host/],
    ['domain with a wildcard', { name: 'x', domain: '*.example.com' }, /bare host/],
    ['domain with an underscore', { name: 'x', domain: 'my_site.example.com' }, /bare host/],
    ['domain as an IP', { name: 'x', domain: '192.168.1.10' }, /bare host/],
    ['domain a public suffix', { name: 'x', domain: 'co.uk' }, /domain is a public suffix/],
    ['quota negative', { name: 'x', domain: 'ok.example.com', monthly_id_quota: -1 }, /monthly_id_quota/],
    ['quota fractional', { name: 'x', domain: 'ok.example.com', monthly_id_quota: 1.5 }, /monthly_id_quota/],
    ['quota as a string', { name: 'x', domain: 'ok.example.com', monthly_id_quota: '10' }, /monthly_id_quota/],
    ['webhook_url not a URL', { name: 'x', domain: 'ok.example.com', webhook_url: 'not a url' }, /webhook_url is not a valid URL/],
    ['webhook_url not http(s)', { name: 'x', domain: 'ok.example.com', webhook_url: 'ftp://example.com/x' }, /http\(s\)/],
    ['webhook_url to cloud metadata', { name: 'x', domain: 'ok.example.com', webhook_url: 'http://169.254.169.254/latest' }, /link-local/],
    ['webhook_url with credentials', { name: 'x', domain: 'ok.example.com', webhook_url: 'https://u:p@example.com/' }, /credentials/],
    [
      'webhook_secret shorter than 8',
      { name: 'x', domain: 'ok.example.com', webhook_url: 'https://example.com/h', webhook_secret: 'short' },
      /webhook_secret.*8/,
    ],
    [
      'webhook_secret without webhook_url',
      { name: 'x', domain: 'ok.example.com', webhook_secret: 'long-enough-secret' },
      /only used together with webhook_url/,
    ],
    ['unknown field', { name: 'x', domain: 'ok.example.com', monthly_quota: 5 }, /unknown field.*monthly_quota/],
  ];

  it.each(cases)('400 when %s', async (_label, body, message) => {
    const before = await snapshot(env.db);
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body.success).toBe(false);
    expect(res.body.error).toMatch(message);
    expect(await snapshot(env.db)).toEqual(before);
  });

  it('400 when webhook_url is unreachable (nothing listening)', async () => {
    const before = await snapshot(env.db);
    const res = await create({ name: 'x', domain: uniqueDomain(), webhook_url: `http://127.0.0.1:${await closedPort()}/hook` });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/webhook_url is not reachable/);
    expect(await snapshot(env.db)).toEqual(before);
  });

  it('400 for a private webhook destination when ALLOW_PRIVATE_WEBHOOKS is off', async () => {
    const strict = await createTestEnv({ allowPrivateWebhooks: false });
    try {
      const p = await seedPartner(strict.deps);
      const res = await call(strict, 'partner-create-child-key', {
        key: p.key,
        body: { name: 'x', domain: uniqueDomain(), webhook_url: receiver.url },
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/loopback/);
    } finally {
      await strict.close();
    }
  });

  it('402 when the pool is prepaid and has no IDs available', async () => {
    const empty = await seedPartner(env.deps, { quota: 0, topup: 0 });
    const before = await snapshot(env.db);
    const res = await create({ name: 'x', domain: uniqueDomain() }, empty.key);
    expect(res.status).toBe(402);
    expect(res.body.error).toMatch(/no identifications left/);
    expect(res.body.code).toBe('insufficient_ids');
    expect(await snapshot(env.db)).toEqual(before);
  });

  it('402 when a fully used prepaid quota has no top-up left; a top-up balance alone is enough', async () => {
    const used = await seedPartner(env.deps, { quota: 3, topup: 0 });
    await env.db`update pools set ids_used_this_period = 3 where account_id = ${used.account_id}`;
    expect((await create({ name: 'x', domain: uniqueDomain() }, used.key)).status).toBe(402);
    await env.db`update pools set topup_balance = 1 where account_id = ${used.account_id}`;
    expect((await create({ name: 'x', domain: uniqueDomain() }, used.key)).status).toBe(201);
  });

  it('402 when the partner has no pool subscription at all', async () => {
    const poolless = await seedPartner(env.deps);
    await env.db`delete from pools where account_id = ${poolless.account_id}`;
    const res = await create({ name: 'x', domain: uniqueDomain() }, poolless.key);
    expect(res.status).toBe(402);
    expect(res.body.error).toMatch(/no pool subscription/);
    expect(res.body.code).toBe('insufficient_ids');
  });

  it('409 when the domain is live on another active website (any account)', async () => {
    const direct = await seedDirectAccount(env.deps);
    const [site] = await env.db<{ domain: string }>`select domain from websites where id = ${direct.website_id}`;
    const before = await snapshot(env.db);
    const res = await create({ name: 'x', domain: site?.domain ?? '' });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/already registered/);
    expect(await snapshot(env.db)).toEqual(before);
  });

  it('allows a domain whose only website is inactive', async () => {
    const direct = await seedDirectAccount(env.deps);
    const [site] = await env.db<{ domain: string }>`
      update websites set status = 'inactive' where id = ${direct.website_id} returning domain`;
    expect((await create({ name: 'x', domain: site?.domain ?? '' })).status).toBe(201);
  });

  it('409 on monthly-invoice billing without a saved card', async () => {
    const p = await seedPartner(env.deps, { billing: 'invoice_monthly', perIdPence: 3 });
    const res = await create({ name: 'x', domain: uniqueDomain() }, p.key);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/saved card/);
  });

  it('409 on monthly-invoice billing without a per-ID rate', async () => {
    const p = await seedPartner(env.deps, { billing: 'invoice_monthly', card: 'pm_card_visa' });
    const res = await create({ name: 'x', domain: uniqueDomain() }, p.key);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/per-ID rate/);
  });

  it('409 on monthly-invoice billing with an outstanding invoice, 201 once it is paid', async () => {
    const p = await seedPartner(env.deps, { billing: 'invoice_monthly', card: 'pm_card_visa', perIdPence: 3 });
    const [invoice] = await env.db<{ id: string }>`
      insert into invoices (pool_id, period_start, period_end, ids_used, amount_pence)
      select id, now() - interval '30 days', now(), 10, 30 from pools where account_id = ${p.account_id}
      returning id`;
    const res = await create({ name: 'x', domain: uniqueDomain() }, p.key);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/invoice is outstanding/);
    await env.db`update invoices set status = 'paid', settled_at = now() where id = ${invoice?.id ?? ''}`;
    expect((await create({ name: 'x', domain: uniqueDomain() }, p.key)).status).toBe(201);
  });
});

describe('partner-create-child-key: concurrency', () => {
  it('lets exactly one of several simultaneous creates claim the same domain', async () => {
    const domain = uniqueDomain('race');
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => create({ name: `racer ${i}`, domain })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(7);
    const [count] = await env.db<{ n: number }>`select count(*)::int as n from websites where domain = ${domain}`;
    expect(count?.n).toBe(1);
    const [orphans] = await env.db<{ n: number }>`
      select count(*)::int as n from accounts a where is_phantom and name like 'racer %'
        and not exists (select 1 from api_keys k where k.account_id = a.id)`;
    expect(orphans?.n).toBe(0);
  });
});
