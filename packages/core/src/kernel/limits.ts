/**
 * The API-wide rate limit: a fixed window per caller. Atomic in Redis (one Lua script; the clock is
 * Redis's TIME, so replicas with skewed clocks agree) or in-process without Redis. A refused request
 * is not counted, so hammering a closed window does not push the reset further away. While Redis
 * cannot answer, the Redis limiter counts in-process instead (createRedisRateLimiter).
 */
export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Whole seconds until the window resets. */
  resetSeconds: number;
  windowSeconds: number;
}

export interface RateLimiter {
  hit(key: string): Promise<RateLimitDecision>;
}

export interface RateLimitPolicy {
  limit: number;
  windowSeconds: number;
}

export function createMemoryRateLimiter(policy: RateLimitPolicy, now: () => number = Date.now): RateLimiter {
  const windows = new Map<string, { start: number; used: number }>();
  let lastSweep = 0;
  return {
    async hit(key) {
      const nowS = Math.floor(now() / 1000);
      const start = nowS - (nowS % policy.windowSeconds);
      if (start !== lastSweep) {
        // Forget finished windows so the map stays as small as the set of active callers.
        for (const [k, w] of windows) if (w.start < start) windows.delete(k);
        lastSweep = start;
      }
      const w = windows.get(key);
      const used = w && w.start === start ? w.used : 0;
      const resetSeconds = start + policy.windowSeconds - nowS;
      if (used >= policy.limit) {
        return { allowed: false, limit: policy.limit, remaining: 0, resetSeconds, windowSeconds: policy.windowSeconds };
      }
      windows.set(key, { start, used: used + 1 });
      return {
        allowed: true,
        limit: policy.limit,
        remaining: policy.limit - used - 1,
        resetSeconds,
        windowSeconds: policy.windowSeconds,
      };
    },
  };
}

/** The subset of ioredis we use, so tests and other clients can stand in. */
export interface RedisEval {
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
}

const FIXED_WINDOW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1])
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local start = now - (now % window)
local key = KEYS[1] .. ':' .. start
local used = tonumber(redis.call('GET', key) or '0')
local reset = start + window - now
if used >= limit then
  return {0, used, reset}
end
used = redis.call('INCR', key)
if used == 1 then
  redis.call('EXPIRE', key, window + 5)
end
return {1, used, reset}
`;

/**
 * One count per caller shared by every replica. When Redis fails to answer (down, unreachable, too
 * slow: the client's timeouts bound the wait), the request is counted by an in-process limiter
 * with the same policy instead: during an outage each replica enforces the limit on its own, so
 * the fleet admits up to replicas × limit, rather than refusing or failing paying partners because
 * a shared counter is down. Each request asks Redis first, so the shared count resumes with the
 * first answer after the outage; what was counted locally meanwhile is not carried over. Failures
 * are not logged here (that would be a line per request): the Redis client reports the outage
 * once (host/src/redis.ts).
 */
export function createRedisRateLimiter(redis: RedisEval, policy: RateLimitPolicy, prefix = 'sl:rl:'): RateLimiter {
  const local = createMemoryRateLimiter(policy);
  return {
    async hit(key) {
      let out: [number, number, number];
      try {
        out = (await redis.eval(FIXED_WINDOW_LUA, 1, `${prefix}${key}`, policy.windowSeconds, policy.limit)) as [number, number, number];
      } catch {
        return local.hit(key);
      }
      const [allowed, used, reset] = out;
      return {
        allowed: allowed === 1,
        limit: policy.limit,
        remaining: Math.max(0, policy.limit - used),
        resetSeconds: Math.max(1, reset),
        windowSeconds: policy.windowSeconds,
      };
    },
  };
}

/**
 * Collect's budgets (tracker/beacon-budgets.ts): what one client, and many clients together, may
 * make the tracker store and identify per minute. Counted like the API-wide limit (one count per
 * key across replicas through Redis, in process without it or while it is down).
 */
export interface TrackerBudgets {
  /** Beacons per client address (an IPv6 /64) per minute, every tracker together. */
  perAddress: RateLimiter;
  /** Beacons from new visitors (addresses the website has no identification for this period) per website per minute. */
  newVisitorsPerWebsite: RateLimiter;
}

export interface TrackerBudgetPolicy {
  beaconsPerAddressPerMinute: number;
  newVisitorBeaconsPerWebsitePerMinute: number;
}

/** The defaults of TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE and TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE (config.ts). */
export const DEFAULT_TRACKER_BUDGETS: TrackerBudgetPolicy = {
  beaconsPerAddressPerMinute: 120,
  newVisitorBeaconsPerWebsitePerMinute: 60,
};

/** Collect's budgets, shared through `redis` when there is one (each under its own key prefix). */
export function createTrackerBudgets(policy: TrackerBudgetPolicy, redis?: RedisEval, prefix = 'sl:tb:'): TrackerBudgets {
  const limiter = (limit: number, name: string) =>
    redis ? createRedisRateLimiter(redis, { limit, windowSeconds: 60 }, `${prefix}${name}:`) : createMemoryRateLimiter({ limit, windowSeconds: 60 });
  return {
    perAddress: limiter(policy.beaconsPerAddressPerMinute, 'address'),
    newVisitorsPerWebsite: limiter(policy.newVisitorBeaconsPerWebsitePerMinute, 'website'),
  };
}
