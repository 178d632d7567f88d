import { CONNECT_LINK_COMPLETIONS } from '../account/complete-connect-link.ts';
import { createUsageMeter } from '../account/usage-meter.ts';
import { builtinEngine } from '../ai/builtin-engine.ts';
import type { AiEngine } from '../ai/engine.ts';
import type { AuthCache } from '../auth/auth-cache.ts';
import type { WriteBehindHost } from '../drivers/write-behind.ts';
import { createApiLookupRecorder } from '../ip/record-api-lookup.ts';
import type { IpDeps } from '../ip/resolve-ip.ts';
import { createAfterWork } from '../kernel/after-work.ts';
import { type BackgroundRunner, createBackgroundRunner } from '../kernel/background.ts';
import type { CoreDeps, Logger, RequestHeaders } from '../kernel/context.ts';
import type { Keyring } from '../kernel/crypto.ts';
import { createMemoryRateLimiter, createTrackerBudgets, DEFAULT_TRACKER_BUDGETS, type RateLimiter, type TrackerBudgets } from '../kernel/limits.ts';
import { type TrustedProxies, trustedProxies } from '../kernel/net/client-address.ts';
import type { WebhookTransport } from '../kernel/net/webhook-destination.ts';
import type { Sql } from '../kernel/sql.ts';
import type { RetentionSettings } from '../lifecycle/settings.ts';
import { builtinProcessor, type PaymentProcessor } from '../payments/processor.ts';
import type { ProfileResearch } from '../research/profile.ts';
import { urlOnlyResearch } from '../research/url-only.ts';
import { AFTER_WORK } from './after-work.ts';

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
  /** Defaults to the built-in rules engine (works offline). */
  ai?: AiEngine;
  /** Defaults to url-only: no lookup, the profile is the URL and a name read from it. */
  research?: ProfileResearch;
  webhookTimeoutMs?: number;
  /** Hands background promises to the runtime (Supabase: EdgeRuntime.waitUntil). */
  handOff?: (p: Promise<unknown>) => void;
  ip?: IpDeps;
  authCache?: AuthCache;
  sweepSecret?: string;
  remoteAddressOf?: (env: unknown) => string | undefined;
  headersOf?: (env: unknown) => RequestHeaders | undefined;
  /** Defaults to none: the socket's peer is the visitor. */
  trustedProxies?: TrustedProxies;
  /** Defaults to on: each stored beacon starts the tracker worker (tests that step it by hand turn it off). */
  trackerKick?: boolean;
  /** Defaults to the documented budgets, in process. */
  trackerBudgets?: TrackerBudgets;
  /** How long API-call counts and lookups gather in memory before one write (write-behind.ts); default 1 s. */
  reportFlushMs?: number;
  /** `PUBLIC_BASE_URL`: where connect links point; unset, links carry no page URL. */
  publicBaseUrl?: string;
  /** `CONSOLE_ORIGINS`; defaults to none (the console is same-origin). */
  consoleOrigins?: readonly string[];
  /** Defaults to CONNECT_LINK_COMPLETIONS per client address, in process. */
  connectLinkRateLimiter?: RateLimiter;
  /** Defaults to DEFAULT_RETENTION (lifecycle/settings.ts). */
  retention?: RetentionSettings;
}

/**
 * buildDeps' last step (build-deps.ts), and only its: the parts configuration and the caller's
 * choices decided, assembled into CoreDeps with the background runner and the write-behind reports.
 */
export function createCoreDeps<D extends Sql>(parts: CoreDepsParts & { db: D }): CoreDeps & { db: D; runner: BackgroundRunner } {
  const runner = createBackgroundRunner(parts.log, parts.handOff);
  const reports: WriteBehindHost = {
    db: parts.db,
    log: parts.log,
    background: (name, task) => runner.run(name, task),
    ...(parts.reportFlushMs !== undefined ? { flushAfterMs: parts.reportFlushMs } : {}),
  };
  return {
    db: parts.db,
    keyring: parts.keyring,
    webhooks: parts.webhooks,
    log: parts.log,
    allowPrivateWebhooks: parts.allowPrivateWebhooks ?? false,
    webhookTimeoutMs: parts.webhookTimeoutMs ?? 10_000,
    rateLimiter: parts.rateLimiter ?? createMemoryRateLimiter({ limit: parts.rateLimitPerMinute ?? 600, windowSeconds: 60 }),
    payments: parts.payments ?? builtinProcessor,
    ai: parts.ai ?? builtinEngine,
    research: parts.research ?? urlOnlyResearch,
    background: (name, task) => runner.run(name, task),
    afterWork: createAfterWork(AFTER_WORK),
    usage: createUsageMeter(reports),
    apiLookups: createApiLookupRecorder(reports),
    ...(parts.ip ? { ip: parts.ip } : {}),
    ...(parts.authCache ? { authCache: parts.authCache } : {}),
    ...(parts.sweepSecret ? { sweepSecret: parts.sweepSecret } : {}),
    ...(parts.remoteAddressOf ? { remoteAddressOf: parts.remoteAddressOf } : {}),
    ...(parts.headersOf ? { headersOf: parts.headersOf } : {}),
    trustedProxies: parts.trustedProxies ?? trustedProxies([]),
    trackerKick: parts.trackerKick ?? true,
    ...(parts.publicBaseUrl ? { publicBaseUrl: parts.publicBaseUrl } : {}),
    consoleOrigins: parts.consoleOrigins ?? [],
    ...(parts.retention ? { retention: parts.retention } : {}),
    connectLinkRateLimiter: parts.connectLinkRateLimiter ?? createMemoryRateLimiter(CONNECT_LINK_COMPLETIONS),
    trackerBudgets: parts.trackerBudgets ?? createTrackerBudgets(DEFAULT_TRACKER_BUDGETS),
    runner,
  };
}
