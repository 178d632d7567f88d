import type { AuthCache } from './auth-cache.ts';
import { type BackgroundRunner, createBackgroundRunner } from './background.ts';
import type { CoreDeps, Logger } from './context.ts';
import type { Keyring } from './crypto.ts';
import type { Sql } from './db.ts';
import type { IpDeps } from './ip/resolve-ip.ts';
import { createMemoryRateLimiter, type RateLimiter } from './limits.ts';
import { type TrustedProxies, trustedProxies } from './net/client-address.ts';
import type { WebhookTransport } from './net/webhook-destination.ts';
import { builtinProcessor, type PaymentProcessor } from './payments/processor.ts';

export interface CoreDepsParts {
  db: Sql;
  keyring: Keyring;
  webhooks: WebhookTransport;
  log: Logger;
  allowPrivateWebhooks?: boolean;
  rateLimiter?: RateLimiter;
  /** Defaults to 600 a minute, in process. */
  rateLimitPerMinute?: number;
  payments?: PaymentProcessor;
  webhookTimeoutMs?: number;
  /** Hands background promises to the runtime (Supabase: EdgeRuntime.waitUntil). */
  handOff?: (p: Promise<unknown>) => void;
  ip?: IpDeps;
  authCache?: AuthCache;
  sweepSecret?: string;
  remoteAddressOf?: (env: unknown) => string | undefined;
  /** Defaults to none: the socket's peer is the visitor. */
  trustedProxies?: TrustedProxies;
  /** Defaults to on: each stored beacon starts the tracker worker (tests that step it by hand turn it off). */
  trackerKick?: boolean;
}

/** The one place dependencies are assembled, with the production defaults; hosts pass what differs. */
export function createCoreDeps<D extends Sql>(parts: CoreDepsParts & { db: D }): CoreDeps & { db: D; runner: BackgroundRunner } {
  const runner = createBackgroundRunner(parts.log, parts.handOff);
  return {
    db: parts.db,
    keyring: parts.keyring,
    webhooks: parts.webhooks,
    log: parts.log,
    allowPrivateWebhooks: parts.allowPrivateWebhooks ?? false,
    webhookTimeoutMs: parts.webhookTimeoutMs ?? 10_000,
    rateLimiter: parts.rateLimiter ?? createMemoryRateLimiter({ limit: parts.rateLimitPerMinute ?? 600, windowSeconds: 60 }),
    payments: parts.payments ?? builtinProcessor,
    background: (name, task) => runner.run(name, task),
    ...(parts.ip ? { ip: parts.ip } : {}),
    ...(parts.authCache ? { authCache: parts.authCache } : {}),
    ...(parts.sweepSecret ? { sweepSecret: parts.sweepSecret } : {}),
    ...(parts.remoteAddressOf ? { remoteAddressOf: parts.remoteAddressOf } : {}),
    trustedProxies: parts.trustedProxies ?? trustedProxies([]),
    trackerKick: parts.trackerKick ?? true,
    runner,
  };
}
