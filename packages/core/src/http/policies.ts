import { z } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { assertConnectedUser } from '../account/assert-connected-user.ts';
import { authenticateAccountActor, authenticateKey, authenticatePartner, findAccountActorKey } from '../auth/authenticate.ts';
import { startAfterWork } from '../kernel/after-work.ts';
import type { Caller, PartnerCaller } from '../kernel/context.ts';
import { AppError, type ErrorCode, unauthorized } from '../kernel/errors.ts';
import { clientAddress } from '../kernel/net/client-address.ts';
import { clientLimitKey } from '../kernel/net/ip.ts';
import { assertPoolHasIds } from '../ledger/assert-pool-has-ids.ts';
import type { HonoEnv } from './hono-env.ts';
import { requestHeader } from './request-header.ts';

/**
 * A function's policy: who may call it and what guards it, as one value. The server runs it (the
 * authentication, then the middleware, in order) and the OpenAPI document is built from it (the
 * errors, headers and security it documents), so the two cannot drift apart.
 */
export interface Policy {
  /** What the OpenAPI document calls the caller. */
  description: string;
  /** Who the caller is; an AppError (401, 403, 400) when nobody acceptable is. */
  authenticate(c: Context<HonoEnv>): Promise<Caller>;
  /**
   * Runs after authentication, in order, around the route: guards refuse before any work (so a
   * refused request changes nothing), and after-effects run once the route has answered.
   */
  middleware: MiddlewareHandler<HonoEnv>[];
  /** Error responses the policy itself can give, by reason (the table in errors.ts gives each its status). */
  errors: Partial<Record<ErrorCode, string>>;
  /** Request headers it reads beyond the credential, validated before the route runs. */
  headers?: z.ZodObject;
  /** Response headers it sets, by status ('default' for every answer). */
  responseHeaders?: Record<string, Record<string, string>>;
  /** The OpenAPI security requirement (empty: no credential). */
  security: Array<Record<string, string[]>>;
  /** Browsers call it from other sites: CORS headers on every answer and preflights answered. */
  cors: boolean;
}

/** The security schemes the policies refer to, registered once in the document. */
export const securitySchemes = {
  AccessKey: {
    type: 'apiKey' as const,
    in: 'header' as const,
    name: 'x-access-key',
    description:
      'An API key: the partner master key on partner-* routes; elsewhere a key of the account (one scoped to its own websites only reads them).',
  },
  SweepToken: {
    type: 'http' as const,
    scheme: 'bearer',
    description: 'SWEEP_SECRET: what the scheduler (Supabase Cron) presents to the sweep functions.',
  },
};

/**
 * The API-wide rate limit, then the out-of-IDs guard. A refused request is refused before any work,
 * so it changes nothing. Headers follow the IETF RateLimit fields draft.
 */
const partnerLimits: MiddlewareHandler<HonoEnv> = async (c, next) => {
  const deps = c.get('deps');
  const caller = partnerCallerOf(c);
  const d = await deps.rateLimiter.hit(caller.apiKeyId);
  const headers = {
    'RateLimit-Policy': `"partner";q=${d.limit};w=${d.windowSeconds}`,
    RateLimit: `"partner";r=${d.remaining};t=${d.resetSeconds}`,
  };
  if (!d.allowed) {
    throw new AppError(
      'rate_limited',
      `rate limit of ${d.limit} requests per ${d.windowSeconds} s reached; retry in ${d.resetSeconds} s`,
      {},
      {
        ...headers,
        'Retry-After': String(d.resetSeconds),
      },
    );
  }
  // Set now, so every answer after the limit carries them: the pool guard's 402, a validation 400,
  // the route's own answers (an error's response is built from the same context).
  for (const [k, v] of Object.entries(headers)) c.header(k, v);
  await assertPoolHasIds({ ctx: deps, input: { accountId: caller.accountId } });
  await next();
};

/**
 * A partner action may change keys (rotate, release, suspend, adopt): this process's auth cache is
 * cleared before the response leaves, so nothing here can accept a key the client has been told
 * is gone. Other processes hear of it from the database (auth-cache.ts).
 */
const forgetCachedKeys: MiddlewareHandler<HonoEnv> = async (c, next) => {
  try {
    await next();
  } finally {
    c.get('deps').authCache?.invalidateAll();
  }
};

/**
 * After a partner action commits (the route has answered, below 400), its events' first delivery
 * attempts are started as after-work (`webhook-delivery`, the verb every other start uses): the
 * response never waits for them and a slow or failing receiver never fails the action.
 */
const dispatchAfterAction: MiddlewareHandler<HonoEnv> = async (c, next) => {
  await next();
  if (c.res.status < 400) startAfterWork(c.get('deps'), 'webhook-delivery', { partnerAccountId: partnerCallerOf(c).accountId });
};

/**
 * Whom a completion is counted against: the client's address (net/client-address.ts), an IPv6
 * client by its /64, which one host is commonly given whole and can step through. Requests whose
 * address is unusable share one count, so they cannot escape the limit.
 */
function completionLimitKey(ip: string | null): string {
  return (ip === null ? null : clientLimitKey(ip)) ?? 'unknown';
}

/**
 * The link's token is the only credential of api-complete-connect-link, so completions are limited
 * per client address (CONNECT_LINK_COMPLETIONS, account/complete-connect-link.ts) before the body is checked or a token looked up.
 * Headers as on partner routes; a refusal is not counted and changes nothing. The 429 is documented
 * by the route (the contract suite makes every status a policy lists happen with the API-wide
 * limiter, which this is not).
 */
const connectLinkLimits: MiddlewareHandler<HonoEnv> = async (c, next) => {
  const caller = c.get('caller');
  const d = await c.get('deps').connectLinkRateLimiter.hit(completionLimitKey(caller.kind === 'visitor' ? caller.ip : null));
  const headers = {
    'RateLimit-Policy': `"connect-link";q=${d.limit};w=${d.windowSeconds}`,
    RateLimit: `"connect-link";r=${d.remaining};t=${d.resetSeconds}`,
  };
  if (!d.allowed) {
    throw new AppError(
      'rate_limited',
      `too many connect-link completions from this address: ${d.limit} per ${d.windowSeconds} s; retry in ${d.resetSeconds} s`,
      {},
      { ...headers, 'Retry-After': String(d.resetSeconds) },
    );
  }
  for (const [k, v] of Object.entries(headers)) c.header(k, v);
  await next();
};

/** The caller under a partner policy; any other kind reaching a partner step is a wiring mistake, not a client's. */
export function partnerCallerOf(c: Context<HonoEnv>): PartnerCaller {
  const caller = c.get('caller');
  if (caller.kind !== 'partner') throw new Error(`a partner step ran for a ${caller.kind} caller`);
  return caller;
}

const accessKey = (c: Context<HonoEnv>) => ({ ctx: c.get('deps'), input: { key: requestHeader(c, 'x-access-key') } });

const KEY_401 = 'x-access-key missing, unknown, revoked or inactive';
const WEBSITES_SCOPE_403 = 'The key is scoped to its own websites and cannot act on the account';
const PARTNER_403 = 'Not the designated partner master key, not a partner account, or another partner’s resource';
const LIMIT_HEADERS = {
  default: {
    RateLimit: 'Remaining requests and seconds to the reset of the API-wide limit (IETF RateLimit fields draft)',
    'RateLimit-Policy': 'The API-wide limit: requests per window',
  },
  '429': { 'Retry-After': 'Seconds until the limit resets' },
};

function partnerPolicy(opts: { limited: boolean; action: boolean }): Policy {
  return {
    description: 'The designated master key of a partner account',
    authenticate: (c) => authenticatePartner(accessKey(c)),
    middleware: [...(opts.limited ? [partnerLimits] : []), ...(opts.action ? [forgetCachedKeys, dispatchAfterAction] : [])],
    errors: {
      unauthorized: KEY_401,
      forbidden: PARTNER_403,
      ...(opts.limited
        ? { insufficient_ids: 'The partner pool has no identifications left', rate_limited: 'API-wide rate limit reached; see Retry-After' }
        : {}),
    },
    ...(opts.limited ? { responseHeaders: LIMIT_HEADERS } : {}),
    security: [{ AccessKey: [] }],
    cors: false,
  };
}

/** The sweep token, compared in constant time (its length is not secret; its bytes are). */
function sameToken(given: string, expected: string): boolean {
  const a = new TextEncoder().encode(given);
  const b = new TextEncoder().encode(expected);
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

const UserHeaders = z.object({
  'x-user-id': z.guid('must be a uuid').openapi({ description: 'The connected user acting (a UUID)' }),
});
const IdempotentUserHeaders = UserHeaders.extend({
  'x-idempotency-key': z.guid('must be a uuid').openapi({ description: 'A UUID: a repeated request with the same key answers the original outcome' }),
});

/** Reads and checks a policy's request headers (400 naming the header). */
function parseHeaders<T extends z.ZodObject>(schema: T, c: Context<HonoEnv>): z.infer<T> {
  const raw: Record<string, string | undefined> = {};
  for (const name of Object.keys(schema.shape)) raw[name] = requestHeader(c, name);
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const header = String(issue?.path[0] ?? 'header');
    throw new AppError(
      'invalid_request',
      raw[header] === undefined ? `the ${header} header is required` : `the ${header} header ${issue?.message ?? 'is not valid'}`,
    );
  }
  return parsed.data;
}

/**
 * Every policy a function can have. Partner routes come in three: actions (rate-limited, pool
 * guarded, and after a success this process forgets cached keys and starts webhook delivery),
 * reads (rate-limited and pool guarded) and the pool read, which is neither (spec: it is how a
 * partner finds out why everything else says 402).
 */
export const policies = {
  partnerAction: partnerPolicy({ limited: true, action: true }),
  partnerRead: partnerPolicy({ limited: true, action: false }),
  partnerPoolRead: partnerPolicy({ limited: false, action: false }),

  /**
   * Any key of an account that is not revoked: a suspended key still reads. What a key scoped to its
   * own websites may see is narrowed by the verb (identification-list: its own websites).
   */
  accountKey: accountKeyPolicy('Any key of the account'),

  /**
   * A key that acts on its account — makes connect links, spends its credits — so not one scoped to
   * its own websites (a released child's key in a partner's account), which is a 403 before any work.
   */
  accountActor: {
    description: 'A key that acts on the account (not one scoped to its own websites)',
    authenticate: (c) => authenticateAccountActor(accessKey(c)),
    middleware: [],
    errors: { unauthorized: KEY_401, forbidden: WEBSITES_SCOPE_403 },
    security: [{ AccessKey: [] }],
    cors: false,
  } satisfies Policy,

  /**
   * The key that owns a tracker (a child's key, or a partner's master key for its own trackers):
   * the same authentication; what it may see is scoped by the verb to the trackers of that key.
   */
  trackerOwner: accountKeyPolicy('The key that owns the tracker: the child’s key, or the partner master key for its own trackers'),

  /** A connected user acting through an account key (spec: `x-user-id`, a UUID). */
  connectedUser: connectedUserPolicy(UserHeaders),
  /** The same, with `x-idempotency-key` (a UUID) required: a repeated request answers the original outcome. */
  idempotentConnectedUser: connectedUserPolicy(IdempotentUserHeaders),

  /** A visitor's browser on a customer's site: no key, CORS for every origin, no credentials. */
  publicTracker: publicPolicy('No key: called by the tracker script from visitors’ browsers', { cors: true }),

  /**
   * Someone holding a connect link (its page, and completing it): no key — the link's token in the
   * body is the credential — and no CORS, because only the link's own page, on this origin, calls it.
   */
  publicLink: publicPolicy('No key: the connect link’s token, in the body, is the credential', { cors: false }),

  /** Completing a connect link: `publicLink`, limited per client address (CONNECT_LINK_COMPLETIONS). */
  publicLinkCompletion: {
    ...publicPolicy('No key: the connect link’s token, in the body, is the credential; limited per client address', { cors: false }),
    middleware: [connectLinkLimits],
    responseHeaders: {
      default: {
        RateLimit: 'Remaining completions from this address and seconds to the reset (IETF RateLimit fields draft)',
        'RateLimit-Policy': 'The limit: completions per window per client address',
      },
      '429': { 'Retry-After': 'Seconds until the limit resets' },
    },
  } satisfies Policy,

  /** The scheduler: `Authorization: Bearer $SWEEP_SECRET`; without a configured secret nobody may. */
  sweep: {
    description: 'The scheduler, with the sweep token',
    authenticate: async (c) => {
      const expected = c.get('deps').sweepSecret;
      const given = requestHeader(c, 'authorization') ?? '';
      if (!expected || !sameToken(given, `Bearer ${expected}`)) throw unauthorized('missing or wrong sweep token');
      return { kind: 'sweep' };
    },
    middleware: [],
    errors: { unauthorized: 'Missing or wrong sweep token' },
    security: [{ SweepToken: [] }],
    cors: false,
  } satisfies Policy,
} satisfies Record<string, Policy>;

/** No credential: the caller is whoever is at the other end, known by the address the server saw. */
function publicPolicy(description: string, opts: { cors: boolean }): Policy {
  return {
    description,
    authenticate: async (c) => {
      const deps = c.get('deps');
      const ip = clientAddress(deps.remoteAddressOf?.(c.env), requestHeader(c, 'x-forwarded-for'), deps.trustedProxies);
      return { kind: 'visitor', origin: requestHeader(c, 'origin'), ip };
    },
    middleware: [],
    errors: {},
    security: [],
    cors: opts.cors,
  };
}

function accountKeyPolicy(description: string): Policy {
  return {
    description,
    authenticate: (c) => authenticateKey(accessKey(c)),
    middleware: [],
    errors: { unauthorized: KEY_401 },
    security: [{ AccessKey: [] }],
    cors: false,
  };
}

function connectedUserPolicy(headers: typeof UserHeaders | typeof IdempotentUserHeaders): Policy {
  return {
    description: 'A connected user, through any key of the account',
    authenticate: async (c) => {
      // A key scoped to its own websites acts for nobody: refused before the user is looked up.
      const key = await findAccountActorKey(accessKey(c));
      const h = parseHeaders(headers, c);
      await assertConnectedUser({ ctx: c.get('deps'), input: { accountId: key.accountId, userId: h['x-user-id'] } });
      return {
        kind: 'connected-user',
        key,
        userId: h['x-user-id'],
        idempotencyKey: 'x-idempotency-key' in h ? (h['x-idempotency-key'] as string) : undefined,
      };
    },
    middleware: [],
    errors: {
      invalid_request: 'A missing or malformed x-user-id (or x-idempotency-key)',
      unauthorized: KEY_401,
      forbidden: 'x-user-id is not a user connected to the key’s account, or the key is scoped to its own websites',
    },
    headers,
    security: [{ AccessKey: [] }],
    cors: false,
  };
}

/** The CORS answer headers of a public function (no credentials, so any origin may call it). */
export const CORS_HEADERS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
  'Access-Control-Allow-Headers': 'Content-Type',
  'Access-Control-Max-Age': '86400',
};
