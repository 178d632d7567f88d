import type { Sql } from '../kernel/sql.ts';
import type { Keyring } from './crypto.ts';
import type { RateLimiter, TrackerBudgets } from './limits.ts';
import type { TrustedProxies } from './net/client-address.ts';
import type { WebhookTransport } from './net/webhook-destination.ts';

export interface Logger {
  /** What nothing happened in (a sweep that found no work): shown only at LOG_LEVEL=debug. */
  debug(msg: string, fields?: Record<string, unknown>): void;
  /** Work done and state changes. */
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * Everything a verb may touch, built once at the entry point (compose/) and injected. The slots
 * typed here need only kernel types; each domain adds its own slot beside the type it owns, by
 * augmenting this interface (`declare module '../kernel/context.ts'`: ai/engine.ts, payments/
 * processor.ts, research/profile.ts, account/usage-meter.ts, auth/auth-cache.ts, ip/resolve-ip.ts,
 * ip/record-api-lookup.ts; kernel/after-work.ts adds `afterWork`), so the kernel imports no domain
 * and no domain imports another's composition.
 */
export interface CoreDeps {
  db: Sql;
  keyring: Keyring;
  webhooks: WebhookTransport;
  allowPrivateWebhooks: boolean;
  /** Receiver timeout for deliveries (spec: 10 s; shorter in tests). */
  webhookTimeoutMs: number;
  log: Logger;
  /** The API-wide limit on partner endpoints. */
  rateLimiter: RateLimiter;
  /**
   * Runs work after the response without delaying or failing it (Node: a tracked promise; Deno:
   * EdgeRuntime.waitUntil). Failures are logged by the implementation. The host's runner: after-work
   * is started through `startAfterWork` (after-work.ts), which runs it here.
   */
  background(name: string, task: () => Promise<unknown>): void;
  /** The bearer token scheduled sweeps must present (`SWEEP_SECRET`); absent, sweeps are refused. */
  sweepSecret?: string;
  /** The request's socket peer, from the host's request bindings (core knows no runtime). */
  remoteAddressOf?: (env: unknown) => string | undefined;
  /** The request's headers by lower-case name, from the host's request bindings (http/request-header.ts). */
  headersOf?: (env: unknown) => RequestHeaders | undefined;
  /** Proxies whose X-Forwarded-For is believed (`TRUSTED_PROXIES`). */
  trustedProxies: TrustedProxies;
  /** Whether a stored beacon starts the tracker worker at once (tracker/work-tracker-queue.ts). */
  trackerKick: boolean;
  /** collect's per-address and per-website budgets (tracker/beacon-budgets.ts). */
  trackerBudgets: TrackerBudgets;
  /**
   * The service's public address (`PUBLIC_BASE_URL`, validated by config.ts): where connect links
   * point. Absent, a link has no page URL; it is never taken from the request's Host.
   */
  publicBaseUrl?: string;
  /** CONSOLE_ORIGINS: where a console hosted apart from the API may call the key endpoints from. */
  consoleOrigins: readonly string[];
  /** Connect-link completions per client address (http/policies.ts, `publicLinkCompletion`). */
  connectLinkRateLimiter: RateLimiter;
}

/** A request's headers by lower-case name; a repeated one as the list of its values. */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * What a key may do (api_keys.scope, migration 0028): `account` acts on its account and reads all of
 * it; `websites` reads only the websites it owns (every key of a partner account but the master: a
 * released child, the partner's own tracker keys).
 */
export type KeyScope = 'account' | 'websites';

/** An API key record as authentication found it (and the auth cache keeps it, frozen). */
export interface KeyRecord {
  apiKeyId: string;
  accountId: string;
  status: 'active' | 'suspended' | 'revoked';
  isPartner: boolean;
  isPartnerMaster: boolean;
  parentApiKeyId: string | null;
  /**
   * Always set by authentication. Optional only so records written by hand (tests, benches) need
   * not name it; an absent scope is read as the narrow one (auth/authenticate.ts, `actsOnAccount`).
   */
  scope?: KeyScope;
}

/** The designated master key of a partner account, active (partner-* endpoints). */
export type PartnerCaller = KeyRecord & { kind: 'partner' };
/** Any key of an account that is not revoked (ip-to-company, ip-to-best-fit, tracker owners). */
export type AccountKeyCaller = KeyRecord & { kind: 'account-key' };
/** A connected user acting through an account key (`x-user-id`, optionally `x-idempotency-key`). */
export interface ConnectedUserCaller {
  kind: 'connected-user';
  key: KeyRecord;
  userId: string;
  idempotencyKey: string | undefined;
}
/** A visitor's browser on a customer's site: no key; the page's origin and the address the server saw. */
export interface VisitorCaller {
  kind: 'visitor';
  origin: string | undefined;
  /** The socket's peer, or a trusted proxy's word for it (net/client-address.ts); null if unusable. */
  ip: string | null;
}
/** The scheduler (Supabase Cron) presenting the sweep bearer token. */
export interface SweepCaller {
  kind: 'sweep';
}

/** Who is behind a request: each endpoint policy admits one kind (http/policies.ts). */
export type Caller = PartnerCaller | AccountKeyCaller | ConnectedUserCaller | VisitorCaller | SweepCaller;

/** The one verb signature: `verb({ ctx, input })`. */
export interface VerbArgs<I, C = CoreDeps> {
  ctx: C;
  input: I;
}

export type PartnerCtx = CoreDeps & { caller: PartnerCaller };

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
