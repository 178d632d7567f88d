import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type CachedVerdict, createRecentResults, grantCredits, type IpDeps } from '@sightline/core';
import { runOperatorCommand } from '@sightline/host';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { realIpDeps, tableProvider } from './support/ip.ts';
import { seedDirectAccount } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';

// 81.2.69.x is a small UK ISP-independent business network in the shipped data: nothing local
// answers it, so the paid providers decide.
const acme = tableProvider('alpha', {
  '81.2.69.142': { domain: 'acme.example', company_name: 'Acme Ltd', confidence: 0.9 },
  '81.2.69.143': { domain: 'acme.example', company_name: 'Acme Ltd', confidence: 0.9 },
  '81.2.69.150': 'fail',
  '81.2.69.151': 'hang',
});
const acme2 = tableProvider('beta', {
  '81.2.69.142': { domain: 'acme.example', company_name: 'Acme Ltd', confidence: 0.85 },
  '81.2.69.143': { domain: 'acme.example', company_name: 'Acme Ltd', confidence: 0.85 },
  '81.2.69.150': { domain: 'acme.example', company_name: 'Acme Ltd', confidence: 0.9 },
  '81.2.69.151': { domain: 'acme.example', company_name: 'Acme Ltd', confidence: 0.9 },
});
const acme3 = tableProvider('gamma', { '81.2.69.142': { domain: 'www.acme.example', company_name: 'ACME', confidence: 0.8 } });
const providerCalls = () => acme.calls.length + acme2.calls.length + acme3.calls.length;

let env: TestEnv;
let account: Awaited<ReturnType<typeof seedDirectAccount>>;
beforeAll(async () => {
  env = await createTestEnv({ ip: realIpDeps({ providers: [acme.provider, acme2.provider, acme3.provider], timeoutMs: 300 }) });
  account = await seedDirectAccount(env.deps, 'Lookup customer');
  await grantCredits({ ctx: env.deps, input: { accountId: account.account_id, credits: 100 } });
});
afterAll(() => env.close());

const lookup = (ip: unknown, key = account.key) => call(env, 'ip-to-company', { key, body: { ip } });
const balance = async (accountId = account.account_id) =>
  (await env.db<{ b: number }>`select credit_balance as b from accounts where id = ${accountId}`)[0]?.b;

describe('ip-to-company', () => {
  it('answers a VPN exit from local data, free, naming the provider', async () => {
    const before = await balance();
    const res = await lookup('185.65.134.1');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      ip: '185.65.134.1',
      identified: false,
      traffic_type: 'vpn',
      vpn_provider: 'Mullvad',
      country_code: 'NL',
      cached: false,
      domain: null,
      company_name: null,
    });
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'cached',
        'company_name',
        'confidence',
        'confidence_level',
        'country_code',
        'domain',
        'identified',
        'ip',
        'matches',
        'reason',
        'traffic_type',
        'vpn_provider',
      ].sort(),
    );
    expect(await balance()).toBe(before);
    expect(providerCalls()).toBe(0);
  });

  it.each([
    ['3.5.140.1', 'hosting'],
    ['80.128.0.1', 'isp'],
    ['2003::1', 'isp'],
    ['193.60.0.1', 'education'],
    ['198.116.0.1', 'government'],
  ])('answers %s (%s) locally and free, without provider calls', async (ip, type) => {
    const before = await balance();
    const res = await lookup(ip);
    expect(res.body).toMatchObject({ traffic_type: type, identified: false });
    expect(typeof res.body.reason).toBe('string');
    expect(await balance()).toBe(before);
    expect(providerCalls()).toBe(0);
  });

  it('answers private and reserved addresses as unknown, free', async () => {
    for (const ip of ['10.1.2.3', '127.0.0.1', '::1', '192.168.0.10', '169.254.1.1']) {
      const res = await lookup(ip);
      expect(res.body).toMatchObject({ traffic_type: 'unknown', identified: false, confidence: 0 });
      expect(res.body.reason).toMatch(/not one seen on the public internet/);
    }
  });

  it('answers a company network from local data, charges 5 credits once, then serves the cache for free', async () => {
    const before = (await balance()) ?? 0;
    const first = await lookup('17.253.144.10');
    expect(first.body).toMatchObject({ identified: true, traffic_type: 'business', domain: 'apple.com', company_name: 'Apple Inc.', cached: false });
    expect(await balance()).toBe(before - 5);
    const second = await lookup('17.253.144.10');
    expect(second.body).toMatchObject({ identified: true, domain: 'apple.com', cached: true });
    expect(await balance()).toBe(before - 5);
    const [tx] = await env.db<{ type: string; amount: number; operation: string; ip: string }>`
      select type, amount, operation, host(ip) as ip from credit_transactions
      where account_id = ${account.account_id} and type = 'debit' order by created_at desc limit 1`;
    expect(tx).toEqual({ type: 'debit', amount: 5, operation: 'ip-to-company', ip: '17.253.144.10' });
  });

  it('asks the providers in parallel when local data cannot tell; consensus identifies and is charged', async () => {
    const before = (await balance()) ?? 0;
    const res = await lookup('81.2.69.142');
    expect(res.body).toMatchObject({ identified: true, domain: 'acme.example', traffic_type: 'business', confidence_level: 'confirmed' });
    expect((res.body.matches as Json[])[0]).toMatchObject({ domain: 'acme.example' });
    expect(acme.calls).toContain('81.2.69.142');
    expect(acme3.calls).toContain('81.2.69.142');
    expect(await balance()).toBe(before - 5);
  });

  it('learns a confirmed answer: the next account gets it from local data without a provider call', async () => {
    const other = await seedDirectAccount(env.deps, 'Second customer');
    await grantCredits({ ctx: env.deps, input: { accountId: other.account_id, credits: 10 } });
    const calls = providerCalls();
    const res = await lookup('81.2.69.142', other.key);
    expect(res.body).toMatchObject({ identified: true, domain: 'acme.example', cached: false });
    expect(res.body.reason).toMatch(/confirmed earlier identification/);
    expect(providerCalls()).toBe(calls);
  });

  it('tolerates a failing and a hanging provider (per-provider timeout)', async () => {
    const res = await lookup('81.2.69.150');
    expect(res.status).toBe(200);
    const slow = await lookup('81.2.69.151');
    expect(slow.status).toBe(200);
    expect(acme.calls).toContain('81.2.69.151');
  });

  it('charges nothing when no provider identifies a business', async () => {
    const before = await balance();
    const res = await lookup('81.2.69.160');
    expect(res.body).toMatchObject({ identified: false, cached: false });
    expect(await balance()).toBe(before);
  });

  it('402 before any provider call when the account cannot pay for a paid lookup; nothing changes', async () => {
    const poor = await seedDirectAccount(env.deps, 'No credits');
    const calls = providerCalls();
    const before = await snapshot(env.db);
    const res = await lookup('81.2.69.143', poor.key);
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ success: false, code: 'insufficient_credits', credits_required: 5, credit_balance: 0 });
    expect(providerCalls()).toBe(calls);
    expect(await snapshot(env.db)).toEqual(before);
    // Free answers still work without credits.
    expect((await lookup('185.65.134.1', poor.key)).status).toBe(200);
  });

  it('imported feeds change answers: a VPN range over a company network, then a company record', async () => {
    const dir = tmpdir();
    const vpnFile = path.join(dir, `vpn-${process.pid}.txt`);
    await writeFile(vpnFile, '# test feed\n17.253.144.0/24\n');
    const out = await runOperatorCommand(env.deps, 'import-ranges', { kind: 'vpn', file: vpnFile, provider: 'Test VPN' });
    expect(out).toMatchObject({ read: 1, kept: 1, rejected: 0, inserted: 1 });
    const fresh = await seedDirectAccount(env.deps, 'Fresh');
    const res = await lookup('17.253.144.10', fresh.key);
    expect(res.body).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'Test VPN', identified: false });

    const csv = path.join(dir, `companies-${process.pid}.csv`);
    await writeFile(csv, 'ip_or_cidr,domain,company_name,confidence\n81.2.69.200/30,widgets.example,Widgets plc,0.9\n');
    await grantCredits({ ctx: env.deps, input: { accountId: fresh.account_id, credits: 5 } });
    const imported = await runOperatorCommand(env.deps, 'import-companies', { file: csv });
    expect(imported).toMatchObject({ kept: 1, inserted: 1 });
    const company = await lookup('81.2.69.201', fresh.key);
    expect(company.body).toMatchObject({ identified: true, domain: 'widgets.example', company_name: 'Widgets plc' });
  });

  it('an import run by another process (the CLI on another machine) reaches this one through the database', async () => {
    // The CLI's own deps: the same database, no local IP data of its own to reload.
    const cli = { ...env.deps, ip: undefined };
    const feed = path.join(tmpdir(), `hosting-${process.pid}.txt`);
    await writeFile(feed, '1.1.1.0/24\n');
    const before = await lookup('1.1.1.7', (await seedDirectAccount(env.deps, 'Before')).key);
    expect(before.body.traffic_type).not.toBe('vpn');
    await runOperatorCommand(cli, 'import-ranges', { kind: 'vpn', file: feed, provider: 'Elsewhere VPN' });
    // The notification arrives asynchronously; a fresh account each time, so no cached result answers.
    let after: Json = {};
    for (let i = 0; i < 50 && after.traffic_type !== 'vpn'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      after = (await lookup('1.1.1.7', (await seedDirectAccount(env.deps, `After ${i}`)).key)).body;
    }
    expect(after).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'Elsewhere VPN' });
  });

  it.each([
    ['not an address', 'example.com'],
    ['an IPv4 with a leading zero', '01.2.3.4'],
    ['an IPv6 with a zone', 'fe80::1%eth0'],
    ['a number', 12345],
  ])('400 for %s', async (_l, ip) => {
    const res = await lookup(ip);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/ip/);
  });

  it('400 for a missing ip and for unknown fields', async () => {
    expect((await call(env, 'ip-to-company', { key: account.key, body: {} })).body.error).toMatch(/ip is required/);
    expect((await call(env, 'ip-to-company', { key: account.key, body: { ip: '1.1.1.1', extra: 1 } })).status).toBe(400);
  });
});

describe('ip-to-best-fit', () => {
  it('answers in the spec’s shape and charges 8 per lookup; VPN results are free', async () => {
    const customer = await seedDirectAccount(env.deps, 'Best fit');
    await grantCredits({ ctx: env.deps, input: { accountId: customer.account_id, credits: 20 } });
    const res = await call(env, 'ip-to-best-fit', { key: customer.key, body: { ip_address: '140.82.112.3', website: 'shop.example.com' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      ip_address: '140.82.112.3',
      identified: true,
      company: 'GitHub, Inc.',
      domain: 'github.com',
      traffic_type: 'business',
    });
    expect(await balance(customer.account_id)).toBe(12);
    const vpn = await call(env, 'ip-to-best-fit', { key: customer.key, body: { ip_address: '185.65.134.1' } });
    expect(vpn.body).toMatchObject({ traffic_type: 'vpn', identified: false, company: '', matches: [] });
    expect(await balance(customer.account_id)).toBe(12);
    // Education is not in best-fit's vocabulary: reported as unknown, and charged as a lookup.
    const edu = await call(env, 'ip-to-best-fit', { key: customer.key, body: { ip_address: '193.60.0.1' } });
    expect(edu.body.traffic_type).toBe('unknown');
    expect(await balance(customer.account_id)).toBe(4);
    expect((await call(env, 'ip-to-best-fit', { key: customer.key, body: { ip_address: '81.2.69.170' } })).status).toBe(402);
  });
});

describe('the stored result', () => {
  it('stands until it expires: a second first lookup (a racing replica) returns the first, and is not charged again', async () => {
    const a = await seedDirectAccount(env.deps, 'Racing replicas');
    await grantCredits({ ctx: env.deps, input: { accountId: a.account_id, credits: 10 } });
    const charge = async (domain: string, cost: number) => {
      const [row] = await env.db<{ balance: number; result: string; ttl_ms: number }>`
        select balance, result::text as result, ttl_ms from sl_charge_lookup(${a.account_id}, 'ip-to-company', '203.0.113.9'::inet, ${cost},
          ${JSON.stringify({ domain })}::text::jsonb, '7 days'::interval)`;
      return { balance: row?.balance, domain: (JSON.parse(row?.result ?? '{}') as { domain?: string }).domain, ttl: row?.ttl_ms ?? 0 };
    };
    expect(await charge('first.example', 5)).toMatchObject({ balance: 5, domain: 'first.example' });
    const second = await charge('second.example', 5);
    expect(second).toMatchObject({ balance: 5, domain: 'first.example' });
    const debits = await env.db<{
      n: number;
    }>`select count(*)::int as n from credit_transactions where account_id = ${a.account_id} and type = 'debit'`;
    expect(debits[0]?.n).toBe(1);
    expect(Math.abs(second.ttl - 7 * 24 * 3600_000)).toBeLessThan(60_000);
    // Once expired, the next result replaces it.
    await env.db`update ip_cache set created_at = now() - interval '8 days', expires_at = now() - interval '1 second'
                 where account_id = ${a.account_id}`;
    expect(await charge('third.example', 0)).toMatchObject({ balance: 5, domain: 'third.example' });
  });
});

describe('the stored result under concurrency', () => {
  it('two first lookups of one address at once are charged once (the account lock orders them)', async () => {
    const a = await seedDirectAccount(env.deps, 'Concurrent first lookups');
    await grantCredits({ ctx: env.deps, input: { accountId: a.account_id, credits: 20 } });
    const charge = (domain: string) => env.db`
      select balance from sl_charge_lookup(${a.account_id}, 'ip-to-company', '198.51.100.7'::inet, 5,
        ${JSON.stringify({ domain })}::text::jsonb, '7 days'::interval)`;
    await Promise.all([charge('one.example'), charge('two.example'), charge('three.example')]);
    expect(await balance(a.account_id)).toBe(15);
  });
});

describe("this process's recent results", () => {
  it('answer a repeat from memory, and only until the stored result expires', async () => {
    let skew = 0;
    const now = () => Date.now() + skew;
    const local = await createTestEnv({
      ip: async (db) => ({ ...(await realIpDeps()(db)), recentResults: createRecentResults<CachedVerdict>(100, now) }),
    });
    try {
      const a = await seedDirectAccount(local.deps, 'Recent');
      await grantCredits({ ctx: local.deps, input: { accountId: a.account_id, credits: 20 } });
      const ask = async () => (await call(local, 'ip-to-company', { key: a.key, body: { ip: '17.253.144.10' } })).body;
      expect(await ask()).toMatchObject({ cached: false, domain: 'apple.com' });
      // Served from memory: the stored row is gone and nothing is charged.
      await local.db`delete from ip_cache where account_id = ${a.account_id}`;
      expect(await ask()).toMatchObject({ cached: true, domain: 'apple.com' });
      expect((await local.db<{ b: number }>`select credit_balance as b from accounts where id = ${a.account_id}`)[0]?.b).toBe(15);

      // Another replica (a fresh memory) takes the stored row's own expiry, an hour away here.
      await call(local, 'ip-to-company', { key: a.key, body: { ip: '17.253.144.11' } });
      await local.db`update ip_cache set expires_at = now() + interval '1 hour' where account_id = ${a.account_id}`;
      (local.deps.ip as IpDeps).recentResults = createRecentResults<CachedVerdict>(100, now);
      expect(await ask()).toMatchObject({ cached: false }); // its row was deleted above: looked up afresh
      const second = async () => (await call(local, 'ip-to-company', { key: a.key, body: { ip: '17.253.144.11' } })).body;
      expect(await second()).toMatchObject({ cached: true });
      await local.db`delete from ip_cache where account_id = ${a.account_id} and ip = '17.253.144.11'`;
      expect(await second()).toMatchObject({ cached: true });
      skew = 3600_000 + 1000;
      expect(await second()).toMatchObject({ cached: false });
    } finally {
      await local.close();
    }
  });
});

const redisUrl = process.env.REDIS_URL;
describe.skipIf(!redisUrl)('Redis shared results (REDIS_URL)', () => {
  it('serves a repeated lookup from Redis in front of Postgres', async () => {
    const redis = new Redis(redisUrl ?? '');
    const hot = await createTestEnv({
      ip: async (db) => ({
        ...(await realIpDeps()(db)),
        sharedResults: {
          get: (k) => redis.get(k),
          set: async (k, v, ttl) => {
            await redis.set(k, v, 'EX', ttl);
          },
          forget: async (pattern) => {
            for (const k of await redis.keys(pattern)) await redis.del(k);
          },
        },
      }),
    });
    try {
      const a = await seedDirectAccount(hot.deps, 'Hot');
      await grantCredits({ ctx: hot.deps, input: { accountId: a.account_id, credits: 20 } });
      await call(hot, 'ip-to-company', { key: a.key, body: { ip: '17.253.144.10' } });
      const key = `sl:ip:v2:ip-to-company:${a.account_id}:17.253.144.10`;
      expect(await redis.ttl(key)).toBeGreaterThan(6 * 24 * 3600);
      // The value carries its expiry, so a replica that copies it into memory keeps it no longer.
      const stored = JSON.parse((await redis.get(key)) ?? '{}') as { expires_at: number; result: Json };
      expect(Math.abs(stored.expires_at - (Date.now() + 7 * 24 * 3600_000))).toBeLessThan(60_000);
      expect(stored.result).toMatchObject({ domain: 'apple.com' });
      await hot.db`delete from ip_cache where account_id = ${a.account_id}`;
      const res = await call(hot, 'ip-to-company', { key: a.key, body: { ip: '17.253.144.10' } });
      expect(res.body).toMatchObject({ cached: true, domain: 'apple.com' });
      // A value past its own expiry is a miss, whatever Redis's TTL says.
      await redis.set(key, JSON.stringify({ expires_at: Date.now() - 1000, result: { domain: 'stale.example' } }), 'EX', 60);
      expect((await call(hot, 'ip-to-company', { key: a.key, body: { ip: '17.253.144.10' } })).body).toMatchObject({ domain: 'apple.com' });
      await hot.db`delete from ip_cache where account_id = ${a.account_id}`;
      // A value this version cannot read is a miss, not an error.
      await redis.set(key, '{"domain":"stale.example"}', 'EX', 60);
      const fresh = await call(hot, 'ip-to-company', { key: a.key, body: { ip: '17.253.144.10' } });
      expect(fresh.body).toMatchObject({ cached: false, domain: 'apple.com' });
      await redis.del(key);
    } finally {
      await redis.quit();
      await hot.close();
    }
  });
});
