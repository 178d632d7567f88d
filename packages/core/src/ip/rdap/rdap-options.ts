import { z } from 'zod';
import { type BootstrapFiles, IANA_BOOTSTRAP_URLS } from './bootstrap.ts';
import type { Budget } from './server-budget.ts';

/**
 * Everything the RDAP source can be told, as the composition passes it in (config once, at the
 * edge). `RdapEnvSchema` is the environment's part, for config.ts to merge into its schema;
 * `rdapOptionsFromEnv` turns its parsed values into options.
 */
export interface RdapOptions {
  /** `RDAP=0` turns the source off: no query leaves, every lookup answers null. */
  enabled: boolean;
  /** `RDAP_BASE_URL`: one server for every query (a mirror, a redirector, a test server); no bootstrap refresh. */
  baseUrl: string | null;
  /** `RDAP_TIMEOUT_MS`: the most a lookup waits, store read and query (redirects and body) together. */
  timeoutMs: number;
  /** Every server's budget (`RDAP_RATE_PER_SECOND`, `RDAP_BURST`), unless `serverBudgets` names its host. */
  budget: Budget;
  /** Budgets by server host (`rdap.lacnic.net`), for registries known to be stricter. */
  serverBudgets: Readonly<Record<string, Budget>>;
  /** How long an answer is kept, found or not (30 days: registrations change rarely). */
  ttlMs: number;
  /** How long a failed query (no answer, hostile JSON) is remembered for its block, in memory only. */
  failureTtlMs: number;
  /** How long a server that failed (timeout, 5xx) is left alone. */
  outagePauseMs: number;
  /** A 429 without a readable Retry-After pauses the server this long; no pause is longer than `maxPauseMs`. */
  defaultRetryAfterMs: number;
  maxPauseMs: number;
  /** The largest answer read; a longer one is abandoned unread. */
  maxBodyBytes: number;
  maxRedirects: number;
  /**
   * The block (leading bits) an allocation's answer is trusted for, and concurrent lookups share a
   * request by: a /24 or a /48 holds few registrations of its own.
   */
  blockBits: { 4: number; 6: number };
  /** Blocks kept in memory. */
  memoryBlocks: number;
  /** Addresses waiting per server for a budget to fill the cache in the background. */
  maxQueuedPerServer: number;
  /** The longest a background fill waits for a budget before leaving the rest to a later lookup. */
  maxBackgroundWaitMs: number;
  /** The bootstrap before any refresh (the shipped copy by default). */
  bootstrap?: BootstrapFiles;
  /** Where the bootstrap is refreshed from, and how often at most. */
  bootstrapUrls: { ipv4: string; ipv6: string };
  bootstrapRefreshMs: number;
}

export const DEFAULT_RDAP_OPTIONS: RdapOptions = {
  enabled: true,
  baseUrl: null,
  timeoutMs: 2000,
  budget: { ratePerSecond: 1, burst: 5 },
  serverBudgets: {},
  ttlMs: 30 * 24 * 3600_000,
  failureTtlMs: 10 * 60_000,
  outagePauseMs: 60_000,
  defaultRetryAfterMs: 60_000,
  maxPauseMs: 3600_000,
  maxBodyBytes: 512 * 1024,
  maxRedirects: 3,
  blockBits: { 4: 24, 6: 48 },
  memoryBlocks: 50_000,
  maxQueuedPerServer: 256,
  maxBackgroundWaitMs: 10_000,
  bootstrapUrls: IANA_BOOTSTRAP_URLS,
  bootstrapRefreshMs: 24 * 3600_000,
};

const flag = z
  .enum(['0', '1', 'true', 'false', ''])
  .default('1')
  .transform((v) => v !== '0' && v !== 'false');

/** The RDAP source's environment variables. */
export const RdapEnvSchema = z.object({
  /** `RDAP=0`: no RDAP queries. On by default. */
  RDAP: flag,
  /** One RDAP server for every query instead of IANA's bootstrap (http or https, ending in its base path). */
  RDAP_BASE_URL: z
    .string()
    .regex(/^https?:\/\/[^\s?#]+$/, 'RDAP_BASE_URL must be an http(s) URL without query or fragment')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  RDAP_TIMEOUT_MS: z.coerce.number().int().min(100).max(30_000).default(DEFAULT_RDAP_OPTIONS.timeoutMs),
  RDAP_RATE_PER_SECOND: z.coerce.number().positive().max(1000).default(DEFAULT_RDAP_OPTIONS.budget.ratePerSecond),
  RDAP_BURST: z.coerce.number().int().min(1).max(1000).default(DEFAULT_RDAP_OPTIONS.budget.burst),
});
export type RdapEnv = z.infer<typeof RdapEnvSchema>;

export function rdapOptionsFromEnv(env: RdapEnv): RdapOptions {
  return {
    ...DEFAULT_RDAP_OPTIONS,
    enabled: env.RDAP,
    baseUrl: env.RDAP_BASE_URL ?? null,
    timeoutMs: env.RDAP_TIMEOUT_MS,
    budget: { ratePerSecond: env.RDAP_RATE_PER_SECOND, burst: env.RDAP_BURST },
  };
}
