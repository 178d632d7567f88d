import { connectRedis, grantCredits, ipDepsFor, parseEnv, type RateLimiter, REDIS_TIMEOUTS, rateLimiterFor, type SharedRedis } from '@sightline/core';
import { packageIpSources } from '@sightline/host';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { capturingLogger } from './support/log.ts';
import { freePort, redisServerAvailable, type TestRedisServer, testRedisServer } from './support/redis-server.ts';
import { seedDirectAccount, seedPartner } from './support/seed.ts';
import { clearOfWindowEnd, sleep, until } from './support/wait.ts';

/**
 * docs/operating.md: "every Redis use has an in-process fallback". Each suite runs its own redis-server and
 * stops it under a running app, because an outage must not touch the REDIS_URL one other suites use.
 */

/**
 * A request answered by the test database takes a few milliseconds; before the fix one waited out the
 * client's retries (80 ms to 3.4 s, then a 500). Generous for a loaded CI machine, yet well under
 * the stalls it guards against.
 */
const PROMPT_MS = 400;

/** A request and how long it took. */
async function timed<T>(request: () => Promise<T>): Promise<{ res: T; ms: number }> {
  const started = performance.now();
  const res = await request();
  return { res, ms: performance.now() - started };
}

/** A client for looking into the test's Redis, apart from the app's, and gone before any outage. */
async function inRedis<T>(url: string, look: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(url, { maxRetriesPerRequest: 0 });
  try {
    return await look(redis);
  } finally {
    redis.disconnect();
  }
}

const skipReason = redisServerAvailable ? '' : ' (skipped: redis-server is not on PATH)';

describe.skipIf(!redisServerAvailable)(`a Redis outage${skipReason}`, () => {
  let server: TestRedisServer;
  let env: TestEnv;
  let redis: SharedRedis | undefined;
  let otherReplica: SharedRedis | undefined;
  let config: ReturnType<typeof parseEnv>;
  const { log, lines } = capturingLogger();
  // ioredis prints "[ioredis] Unhandled error event" with console.error when nobody listens.
  let consoleError: MockInstance<typeof console.error>;
  let partners: Awaited<ReturnType<typeof seedPartner>>[] = [];
  let direct: Awaited<ReturnType<typeof seedDirectAccount>>;

  const ioredisConsoleLines = () => consoleError.mock.calls.filter((args) => String(args[0]).includes('[ioredis]'));
  const outageWarnings = () => lines.filter((l) => l.level === 'warn' && /Redis is unreachable/.test(l.msg));
  const recoveries = () => lines.filter((l) => l.level === 'info' && /Redis is reachable again/.test(l.msg));
  const partner = (i: number) => {
    const p = partners[i];
    if (!p) throw new Error(`no partner ${i} seeded`);
    return p;
  };
  const listChildren = (key: string) => timed(() => call(env, 'partner-list-children', { key }));
  const lookup = (ip: string) => timed(() => call(env, 'ip-to-company', { key: direct.key, body: { ip } }));

  beforeAll(async () => {
    consoleError = vi.spyOn(console, 'error');
    server = testRedisServer(await freePort());
    await server.start();
    // As buildDeps builds them: one logger, the Redis client, limiter and IP deps.
    config = parseEnv({ REDIS_URL: server.url, RATE_LIMIT_PER_MINUTE: '3' });
    redis = connectRedis(Redis, server.url, log);
    const limiter: RateLimiter = rateLimiterFor(config, redis);
    env = await createTestEnv({ log, rateLimiter: limiter, ip: (db) => ipDepsFor(config, db, log, redis, packageIpSources) });
    // 0-5 for the outage, 6-7 untouched until Redis pauses.
    partners = await Promise.all(Array.from({ length: 8 }, (_, i) => seedPartner(env.deps, { name: `Partner ${i}` })));
    direct = await seedDirectAccount(env.deps, 'Lookup customer');
    await grantCredits({ ctx: env.deps, input: { accountId: direct.account_id, credits: 100 } });
  });
  afterAll(async () => {
    consoleError?.mockRestore();
    await env?.close();
    await redis?.close();
    await otherReplica?.close();
    await server?.kill();
  });

  it('while Redis is up, the partner limit is counted in Redis', async () => {
    await clearOfWindowEnd(10_000);
    const first = partner(0);
    expect((await listChildren(first.key)).res.status).toBe(200);
    const counted = await inRedis(server.url, async (r) => {
      const keys = await r.keys(`sl:rl:${first.api_key_id}:*`);
      return Promise.all(keys.map((k) => r.get(k)));
    });
    expect(counted).toEqual(['1']);
  });

  it('with Redis down, rate-limited partner endpoints answer at once, the in-process limit refuses past it, and the outage is logged once', async () => {
    await server.kill();
    const killedAt = Date.now();
    // The 18 requests, spread over more than a second so the client retries meanwhile.
    const answers: { status: number; ms: number }[] = [];
    for (let round = 0; round < 3; round++) {
      for (const p of partners.slice(0, 6)) {
        const { res, ms } = await listChildren(p.key);
        answers.push({ status: res.status, ms });
      }
      await sleep(400);
    }
    expect(answers.map((a) => a.status)).toEqual(Array(18).fill(200));
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(PROMPT_MS);

    // Partner 0's request before the outage went to Redis; its three here filled the local window.
    const refused = await listChildren(partner(0).key);
    expect(refused.res.status).toBe(429);
    expect(refused.res.headers.get('ratelimit')).toMatch(/r=0/);
    expect(refused.ms).toBeLessThan(PROMPT_MS);

    // A replica started during the outage (an Edge Function's cold start) answers at once too.
    otherReplica = connectRedis(Redis, server.url, log);
    const cold = await timed(() => rateLimiterFor(config, otherReplica).hit('cold-start'));
    expect(cold.res.allowed).toBe(true);
    expect(cold.ms).toBeLessThan(REDIS_TIMEOUTS.firstConnectMs + PROMPT_MS);

    await sleep(Math.max(0, 1_500 - (Date.now() - killedAt)));
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    // One warning per client (this replica and the one started during the outage), not per request.
    expect(outageWarnings()).toHaveLength(2);
    expect(ioredisConsoleLines()).toEqual([]);
  });

  it('with Redis down, ip-to-company answers at once from Postgres and this process', async () => {
    const fresh = await lookup('81.2.69.160');
    expect(fresh.res.status).toBe(200);
    expect(fresh.res.body).toMatchObject({ ip: '81.2.69.160', cached: false });
    expect(fresh.ms).toBeLessThan(PROMPT_MS);
    const again = await lookup('81.2.69.160');
    expect(again.res.body).toMatchObject({ ip: '81.2.69.160', cached: true });
    expect(again.ms).toBeLessThan(PROMPT_MS);
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(ioredisConsoleLines()).toEqual([]);
  });

  it('once Redis is back, both replicas share one count and the lookup cache again, with one recovery line each', async () => {
    await server.start();
    await until('both clients to reconnect', () => recoveries().length === 2);
    const warningsSoFar = outageWarnings().length;

    await clearOfWindowEnd();
    const second = partner(1);
    const replicaLimiter = rateLimiterFor(config, otherReplica);
    // Partner 1 used its local window during the outage; Redis starts it afresh (it came back
    // empty), and the two replicas now draw on that one count.
    expect((await listChildren(second.key)).res.status).toBe(200);
    expect((await listChildren(second.key)).res.status).toBe(200);
    expect(await replicaLimiter.hit(second.api_key_id)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await listChildren(second.key)).res.status).toBe(429);
    const counted = await inRedis(server.url, async (r) => {
      const keys = await r.keys(`sl:rl:${second.api_key_id}:*`);
      return Promise.all(keys.map((k) => r.get(k)));
    });
    expect(counted).toEqual(['3']);

    expect((await lookup('81.2.69.161')).res.status).toBe(200);
    const cachedKeys = await inRedis(server.url, (r) => r.keys(`sl:ip:v2:ip-to-company:${direct.account_id}:81.2.69.161`));
    expect(cachedKeys).toHaveLength(1);

    expect(outageWarnings()).toHaveLength(warningsSoFar);
    expect(recoveries()).toHaveLength(2);
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(ioredisConsoleLines()).toEqual([]);
  });

  it('a Redis that stops answering costs a request at most the command timeout, then is skipped until it answers again', async () => {
    await clearOfWindowEnd();
    const warningsBefore = outageWarnings().length;
    const recoveriesBefore = recoveries().length;
    server.pause();
    const answers: { status: number; ms: number }[] = [];
    const pausedAt = Date.now();
    // Past the socket timeout: the client gives up on the silent connection and marks Redis down.
    while (Date.now() - pausedAt < REDIS_TIMEOUTS.socketMs + 500) {
      for (const p of [partner(6), partner(7)]) {
        const { res, ms } = await listChildren(p.key);
        answers.push({ status: res.status, ms });
      }
      await sleep(50);
    }
    // Each partner's first three are admitted by this replica alone, the rest refused by it.
    expect(answers.filter((a) => a.status === 200)).toHaveLength(6);
    expect(answers.every((a) => a.status === 200 || a.status === 429)).toBe(true);
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(REDIS_TIMEOUTS.commandMs + PROMPT_MS);
    const late = await listChildren(partner(6).key);
    expect(late.ms).toBeLessThan(PROMPT_MS);
    expect(redis?.available).toBe(false);
    expect(outageWarnings()).toHaveLength(warningsBefore + 1);

    server.resume();
    await until('this replica to reconnect', () => recoveries().length > recoveriesBefore);
    expect(redis?.available).toBe(true);
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(ioredisConsoleLines()).toEqual([]);
  });
});
