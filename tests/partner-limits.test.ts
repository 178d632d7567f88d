import { createMemoryRateLimiter, createRedisRateLimiter, type RateLimiter } from '@sightline/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allFunctions } from '../functions/index.ts';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { createChildVia, seedPartner } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';

/** A request each partner route accepts, so only the limit under test can refuse it. */
function validBody(name: string, childId: string): unknown {
  switch (name) {
    case 'partner-create-child-key':
      return { name: 'x', domain: `limit-${Math.random().toString(36).slice(2)}.example.com` };
    case 'partner-update-child':
      return { child_api_key_id: childId, name: 'renamed' };
    case 'partner-adopt-existing-key':
      return { api_key_id: childId, name: 'x' };
    case 'partner-set-webhook':
      return { url: null };
    case 'partner-transfer-topup':
      return { child_api_key_id: childId, amount: 1 };
    default:
      return { child_api_key_id: childId };
  }
}

// The routes whose policy documents the out-of-IDs 402: every partner route but partner-pool-state.
const guardedRoutes = allFunctions.filter((f) => f.policy.errors.insufficient_ids !== undefined);

describe('out-of-IDs guard (402)', () => {
  let env: TestEnv;
  let empty: Awaited<ReturnType<typeof seedPartner>>;
  let childId = '';
  beforeAll(async () => {
    env = await createTestEnv();
    empty = await seedPartner(env.deps, { quota: 1, topup: 0 });
    childId = (await createChildVia(env, empty.key)).child.api_key_id;
    await env.db`update pools set ids_used_this_period = 1 where account_id = ${empty.account_id}`;
  });
  afterAll(() => env.close());

  it('the guard covers every partner route but partner-pool-state', () => {
    expect(guardedRoutes.map((f) => f.name).sort()).toEqual(
      allFunctions
        .filter((f) => f.name.startsWith('partner-') && f.name !== 'partner-pool-state')
        .map((f) => f.name)
        .sort(),
    );
  });

  it.each(guardedRoutes.map((f) => [f.name, f] as const))(
    '%s answers 402 when the caller’s prepaid pool has no IDs left, changing nothing',
    async (name, def) => {
      const before = await snapshot(env.db);
      const res = await call(env, name, { key: empty.key, method: def.method, body: def.method === 'POST' ? validBody(name, childId) : undefined });
      expect(res.status).toBe(402);
      expect(res.body).toEqual({ success: false, error: expect.stringMatching(/no identifications left/) as unknown, code: 'insufficient_ids' });
      // The request was counted, so its answer says how much of the limit is left, as documented.
      expect(res.headers.get('ratelimit')).toMatch(/^"partner";r=\d+;t=\d+$/);
      expect(await snapshot(env.db)).toEqual(before);
    },
  );

  it('partner-pool-state is exempt', async () => {
    const res = await call(env, 'partner-pool-state', { key: empty.key });
    expect(res.status).toBe(200);
  });

  it('a monthly-invoice pool over its quota is not out of IDs', async () => {
    const inv = await seedPartner(env.deps, { billing: 'invoice_monthly', quota: 1, card: 'pm_x', perIdPence: 1 });
    await env.db`update pools set ids_used_this_period = 5 where account_id = ${inv.account_id}`;
    expect((await call(env, 'partner-list-children', { key: inv.key })).status).toBe(200);
  });

  it('a top-up balance alone keeps the endpoints open', async () => {
    await env.db`update pools set topup_balance = 1 where account_id = ${empty.account_id}`;
    expect((await call(env, 'partner-list-children', { key: empty.key })).status).toBe(200);
    await env.db`update pools set topup_balance = 0 where account_id = ${empty.account_id}`;
  });
});

describe('API-wide rate limit (429)', () => {
  let env: TestEnv;
  let partner: Awaited<ReturnType<typeof seedPartner>>;
  let neighbour: Awaited<ReturnType<typeof seedPartner>>;
  beforeAll(async () => {
    env = await createTestEnv({ rateLimiter: createMemoryRateLimiter({ limit: 3, windowSeconds: 60 }) });
    partner = await seedPartner(env.deps, { quota: 100 });
    neighbour = await seedPartner(env.deps, { quota: 100, name: 'Neighbour' });
  });
  afterAll(() => env.close());

  it('answers 429 with Retry-After and RateLimit headers once the limit is used; refused requests change nothing', async () => {
    for (let i = 0; i < 3; i++) {
      const ok = await call(env, 'partner-list-children', { key: partner.key });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('ratelimit-policy')).toBe('"partner";q=3;w=60');
      expect(ok.headers.get('ratelimit')).toMatch(new RegExp(`^"partner";r=${2 - i};t=\\d+$`));
    }
    const before = await snapshot(env.db);
    const refused = await call(env, 'partner-create-child-key', { key: partner.key, body: { name: 'x', domain: 'refused.example.com' } });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ success: false, error: expect.stringMatching(/rate limit/) as unknown, code: 'rate_limited' });
    const retry = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(retry) && retry >= 1 && retry <= 60).toBe(true);
    expect(refused.headers.get('ratelimit')).toMatch(/r=0/);
    expect(await snapshot(env.db)).toEqual(before);
  });

  it('an error answer to a counted request carries the RateLimit headers too', async () => {
    const bad = await call(env, 'partner-create-child-key', { key: neighbour.key, body: { name: 'x' } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('ratelimit-policy')).toBe('"partner";q=3;w=60');
    expect(bad.headers.get('ratelimit')).toMatch(/^"partner";r=\d+;t=\d+$/);
  });

  it('is per partner key, and partner-pool-state is exempt', async () => {
    expect((await call(env, 'partner-list-children', { key: neighbour.key })).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await call(env, 'partner-pool-state', { key: partner.key })).status).toBe(200);
  });
});

describe('rate limiters', () => {
  it('the in-process limiter opens a fresh window when the old one ends', async () => {
    let now = 1_000_000_000;
    const limiter = createMemoryRateLimiter({ limit: 2, windowSeconds: 10 }, () => now);
    expect((await limiter.hit('a')).allowed).toBe(true);
    expect((await limiter.hit('a')).allowed).toBe(true);
    const refused = await limiter.hit('a');
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    now += refused.resetSeconds * 1000;
    expect((await limiter.hit('a')).allowed).toBe(true);
  });

  const redisUrl = process.env.REDIS_URL;
  describe.skipIf(!redisUrl)('on real Redis (REDIS_URL)', () => {
    let redis: Redis;
    beforeAll(() => {
      redis = new Redis(redisUrl ?? '');
    });
    afterAll(async () => {
      await redis.quit();
    });

    it('admits exactly the limit from many concurrent callers (atomic Lua, Redis clock)', async () => {
      const limiter: RateLimiter = createRedisRateLimiter(redis, { limit: 20, windowSeconds: 60 }, `sl:test:${Date.now()}:`);
      const results = await Promise.all(Array.from({ length: 60 }, () => limiter.hit('partner-x')));
      expect(results.filter((r) => r.allowed)).toHaveLength(20);
      expect(results.filter((r) => !r.allowed).every((r) => r.remaining === 0 && r.resetSeconds >= 1)).toBe(true);
    });

    it('does not count refused requests', async () => {
      const prefix = `sl:test:${Date.now()}:refused:`;
      const limiter = createRedisRateLimiter(redis, { limit: 1, windowSeconds: 60 }, prefix);
      await limiter.hit('k');
      for (let i = 0; i < 5; i++) await limiter.hit('k');
      const keys = await redis.keys(`${prefix}k:*`);
      expect(keys).toHaveLength(1);
      expect(await redis.get(keys[0] ?? '')).toBe('1');
    });
  });
});
