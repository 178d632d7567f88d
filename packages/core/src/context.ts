import type { AuthCache } from './auth-cache.ts';
import type { Keyring } from './crypto.ts';
import type { Sql } from './db.ts';
import type { RateLimiter } from './limits.ts';
import type { WebhookTransport } from './net/webhook-destination.ts';
import type { PaymentProcessor } from './payments/processor.ts';
import type { IpDeps } from './ip/waterfall.ts';

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Everything a verb may touch, built once at the entry point and injected. */
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
  /** Charges auto-reloads. */
  payments: PaymentProcessor;
  /**
   * Runs work after the response without delaying or failing it (Node: a tracked promise; Deno:
   * EdgeRuntime.waitUntil). Failures are logged by the implementation.
   */
  background(name: string, task: () => Promise<unknown>): void;
  /** The identification waterfall's data and providers; absent where IP endpoints are not served. */
  ip?: IpDeps;
  /**
   * Key records by hash, invalidated by database notifications and by this process's own
   * key-changing requests (auth-cache.ts); absent where nothing listens, and then every request
   * reads its key from the database.
   */
  authCache?: AuthCache;
}

/** The authenticated key behind a request. */
export interface Caller {
  apiKeyId: string;
  accountId: string;
  status: 'active' | 'suspended' | 'revoked';
  isPartner: boolean;
  isPartnerMaster: boolean;
  parentApiKeyId: string | null;
}

/** The one verb signature: `verb({ ctx, input })`. */
export interface VerbArgs<I, C = CoreDeps> {
  ctx: C;
  input: I;
}

export type PartnerCtx = CoreDeps & { caller: Caller };

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
