import { z } from 'zod';
import { AZURE_DEFAULT_API_VERSION, llmApiStyle } from '../ai/openai-compatible.ts';
import { RdapEnvSchema } from '../ip/rdap/index.ts';
import { ReverseDnsSettings } from '../ip/reverse-dns/index.ts';
import { DEFAULT_TRACKER_BUDGETS } from '../kernel/limits.ts';
import { parseCidr } from '../kernel/net/ip.ts';
import { RetentionEnvSchema, retentionConflict } from '../lifecycle/settings.ts';

const flag = z
  .enum(['0', '1', 'true', 'false', ''])
  .default('0')
  .transform((v) => v === '1' || v === 'true');

/**
 * Every setting, validated once at the entry point (Node host or Deno entrypoint) and then
 * passed down. Core code never reads the environment itself.
 */
export const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8787),
  HOST: z.string().default('0.0.0.0'),
  DATA_DIR: z.string().min(1).default('.data'),
  /** The embedded database's shared buffers (a Postgres size, e.g. 16MB): most of its memory. */
  PGLITE_SHARED_BUFFERS: z
    .string()
    .regex(/^\d+(kB|MB|GB)$/, 'PGLITE_SHARED_BUFFERS must be a size like 16MB')
    .default('16MB'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must be a postgres:// URL')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** Set to 0 behind a transaction pooler (PgBouncer, Supavisor on :6543): no named prepared statements. */
  DATABASE_PREPARE: flag.default(true),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'REDIS_URL must be a redis:// or rediss:// URL')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  /** Derives the API-key pepper and the webhook-secret sealing key. Required with DATABASE_URL. */
  SIGHTLINE_SECRET: z.string().min(32, 'SIGHTLINE_SECRET must be at least 32 characters').optional(),
  ALLOW_PRIVATE_WEBHOOKS: flag,
  /** API-wide requests per minute per partner key (every partner endpoint but partner-pool-state). */
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(600),
  /**
   * collect: beacons per client address (an IPv6 /64) per minute, every tracker together. A person
   * sends a few a minute; this leaves room for an office behind one NAT and stops one client's flood.
   */
  TRACKER_BEACONS_PER_ADDRESS_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(DEFAULT_TRACKER_BUDGETS.beaconsPerAddressPerMinute),
  /**
   * collect: beacons from new visitors (addresses the website has no identification for in this
   * period: each may use an ID) per website per minute. Bounds how many IDs many addresses together
   * can burn a minute; returning visitors' beacons are never counted against it.
   */
  TRACKER_NEW_VISITOR_BEACONS_PER_WEBSITE_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(DEFAULT_TRACKER_BUDGETS.newVisitorBeaconsPerWebsitePerMinute),
  /** Who charges auto-reloads: `builtin` (approve and record, for self-hosting) or `stripe`. */
  PAYMENTS_PROVIDER: z.enum(['builtin', 'stripe']).default('builtin'),
  STRIPE_SECRET_KEY: z
    .string()
    .regex(/^(sk|rk)_(test|live)_/, 'STRIPE_SECRET_KEY must be a Stripe secret or restricted key')
    .optional(),
  /**
   * Proxies in front of the service whose X-Forwarded-For is believed (comma-separated CIDRs): the
   * load balancer or CDN, nobody else. Empty: the socket's peer is the visitor.
   */
  TRUSTED_PROXIES: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((c) => c.trim())
        .filter(Boolean),
    )
    .refine(
      (list) => list.every((c) => parseCidr(c) !== null),
      'TRUSTED_PROXIES must be a comma-separated list of CIDRs, e.g. 10.0.0.0/8,2001:db8::/32',
    ),
  /**
   * The spec's {base_url} as clients reach it: where the functions are, e.g.
   * https://api.example.com/functions/v1 or https://<ref>.supabase.co/functions/v1. Connect links
   * point to <PUBLIC_BASE_URL>/connect. Never taken from a request (its Host is the client's to
   * write, and a TLS-terminating proxy makes every request look like http). Unset: a link has no
   * page URL (`url: null`).
   */
  PUBLIC_BASE_URL: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      const text = raw?.trim();
      if (!text) return undefined;
      const checked = checkPublicBaseUrl(text);
      if (typeof checked === 'string') return checked;
      ctx.addIssue({ code: 'custom', message: `PUBLIC_BASE_URL ${checked.refused}` });
      return z.NEVER;
    }),
  /**
   * Origins (comma-separated, e.g. https://console.agency.com) the console may be served from when
   * it is hosted apart from the API: the key endpoints answer their preflights and their answers
   * with CORS for exactly these. Empty: the console is same-origin (/console), and nothing changes.
   */
  CONSOLE_ORIGINS: z
    .string()
    .default('')
    .transform((raw, ctx) => {
      const origins: string[] = [];
      for (const text of raw
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean)) {
        const checked = checkConsoleOrigin(text);
        if (typeof checked === 'string') origins.push(checked);
        else ctx.addIssue({ code: 'custom', message: `CONSOLE_ORIGINS: ${text} ${checked.refused}` });
      }
      return origins;
    }),
  /** Bearer token Supabase Cron presents to the scheduled sweep functions. */
  SWEEP_SECRET: z.string().min(32, 'SWEEP_SECRET must be at least 32 characters').optional(),
  /** How often the Node host runs the period rollover sweep (seconds). */
  ROLLOVER_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(3600),
  /** Paid identification providers: each is enabled by its key. */
  IPINFO_TOKEN: z.string().min(1).optional(),
  IPAPI_IS_KEY: z.string().min(1).optional(),
  SNITCHER_API_KEY: z.string().min(1).optional(),
  /** Deeper enrichment for ip-to-best-fit (People Data Labs), and its profile research when RESEARCH_PROVIDER=people-data-labs. */
  PDL_API_KEY: z.string().min(1).optional(),
  PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(100).max(30_000).default(3000),
  /** Consensus weights, e.g. `ipinfo=1,ipapi.is=0.8,snitcher=1.2`. */
  PROVIDER_WEIGHTS: z
    .string()
    .regex(/^([a-z0-9._-]+=\d+(\.\d+)?)(,[a-z0-9._-]+=\d+(\.\d+)?)*$/, 'PROVIDER_WEIGHTS must look like ipinfo=1,ipapi_is=0.8')
    .optional()
    .transform((v) =>
      Object.fromEntries(
        (v ? v.split(',') : []).map((pair) => {
          const [name = '', weight = '1'] = pair.split('=');
          return [name, Number(weight)];
        }),
      ),
    ),
  /**
   * The OpenAI-compatible chat-completions server that drafts ICPs and writes messages, up to
   * `/chat/completions` (e.g. https://api.openai.com/v1, http://localhost:11434/v1). Unset: the
   * built-in rules engine, which works offline.
   */
  LLM_BASE_URL: z
    .url({ protocol: /^https?$/, error: 'LLM_BASE_URL must be an http:// or https:// URL' })
    .optional()
    .or(z.literal('').transform(() => undefined)),
  LLM_MODEL: z
    .string()
    .min(1)
    .optional()
    .or(z.literal('').transform(() => undefined)),
  /** Optional: local servers (Ollama, vLLM, LM Studio) need none. */
  LLM_API_KEY: z
    .string()
    .min(1)
    .optional()
    .or(z.literal('').transform(() => undefined)),
  /**
   * `azure` for an Azure OpenAI deployment URL (api-key header, api-version query); unset, it is
   * detected from LLM_BASE_URL (`/openai/deployments/<name>`).
   */
  LLM_API_STYLE: z
    .enum(['openai', 'azure'])
    .optional()
    .or(z.literal('').transform(() => undefined)),
  LLM_AZURE_API_VERSION: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}(-preview)?$/, 'LLM_AZURE_API_VERSION must look like 2024-10-21')
    .default(AZURE_DEFAULT_API_VERSION),
  /** Per attempt; reasoning models can take tens of seconds. */
  LLM_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(30_000),
  /** Further attempts after a timeout, 429 or 5xx. */
  LLM_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  /** Who looks up a prospect's profile for api-full-request: nobody (`url-only`) or People Data Labs (needs PDL_API_KEY). */
  RESEARCH_PROVIDER: z.enum(['url-only', 'people-data-labs']).default('url-only'),
  /**
   * How long a key record may be served from memory (auth-cache.ts); 0 reads every key from the
   * database. Invalidation is by notification; this only bounds staleness if one is ever lost.
   */
  AUTH_CACHE_TTL_SECONDS: z.coerce.number().int().min(0).max(3600).default(30),
  AUTH_CACHE_MAX_KEYS: z.coerce.number().int().min(1).max(10_000_000).default(100_000),
  /** Load the local IP databases at start (set 0 for a partner-API-only process). */
  IP_DATA: flag.default(true),
  /** The operator's own MaxMind / IPinfo `.mmdb` files, comma-separated paths (Node host); the type is read from each file. */
  IP_DATABASES: z
    .string()
    .optional()
    .or(z.literal('').transform(() => undefined)),
  /**
   * When the paid providers are asked: `unconfirmed` (only when the free sources did not confirm a
   * company: fewer paid calls) or `always`.
   */
  PAID_LOOKUPS: z.enum(['unconfirmed', 'always']).default('unconfirmed'),
  ...ReverseDnsSettings.shape,
  ...RdapEnvSchema.shape,
  /** How long data is kept and when a visitor's address goes (lifecycle/settings.ts; docs/operating.md, "Data lifecycle"). */
  ...RetentionEnvSchema.shape,
  /**
   * Create and print a demo partner on an empty database. Unset means: on the embedded default
   * only. A live partner with a printed key must never appear on a production database because
   * someone ran `npm start` against it first; set 1 to ask for one there.
   */
  DEMO_PARTNER: z
    .enum(['0', '1', 'true', 'false'])
    .optional()
    .or(z.literal('').transform(() => undefined))
    .transform((v) => (v === undefined ? undefined : v === '1' || v === 'true')),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
});

export type Env = z.infer<typeof EnvSchema>;

/**
 * Local development: a loopback host, which only this machine can reach, so plain http carries
 * nothing over a network — `localhost` and names under it, 127.0.0.0/8, [::1].
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** An origin the console may be served from: scheme, host and port only; https, or http on a loopback host. */
export function checkConsoleOrigin(text: string): string | { refused: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { refused: 'must be an origin, e.g. https://console.example.com' };
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    return { refused: 'must be https (plain http only on a loopback host)' };
  }
  if (url.origin !== text.replace(/\/$/, '')) return { refused: 'must be an origin alone: no path, query, user or password' };
  return url.origin;
}

/**
 * PUBLIC_BASE_URL's rules: an absolute https URL (http only on a loopback host), with no
 * credentials, query or fragment. Its canonical form has no trailing slash, so `<base>/connect`
 * is always one slash apart.
 */
export function checkPublicBaseUrl(text: string): string | { refused: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { refused: 'must be an absolute URL, e.g. https://api.example.com/functions/v1' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { refused: 'must be an https:// URL' };
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    return { refused: 'must be an https:// URL (plain http only for localhost, 127.0.0.0/8 or [::1] in local development)' };
  }
  if (url.username || url.password) return { refused: 'must not contain a user name or password' };
  if (url.search || url.hash || text.includes('?') || text.includes('#')) return { refused: 'must not have a query or fragment' };
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

const EnvRules = EnvSchema.refine((e) => e.PAYMENTS_PROVIDER !== 'stripe' || e.STRIPE_SECRET_KEY, {
  message: 'STRIPE_SECRET_KEY is required when PAYMENTS_PROVIDER=stripe',
  path: ['STRIPE_SECRET_KEY'],
})
  .refine((e) => (e.LLM_BASE_URL === undefined) === (e.LLM_MODEL === undefined), {
    message: 'LLM_BASE_URL and LLM_MODEL are set together (both unset: the built-in engine)',
    path: ['LLM_MODEL'],
  })
  .refine((e) => !e.LLM_BASE_URL || (e.LLM_API_STYLE ?? llmApiStyle(e.LLM_BASE_URL)) !== 'azure' || e.LLM_API_KEY, {
    message: 'LLM_API_KEY is required for an Azure OpenAI deployment',
    path: ['LLM_API_KEY'],
  })
  .refine((e) => e.RESEARCH_PROVIDER !== 'people-data-labs' || e.PDL_API_KEY, {
    message: 'PDL_API_KEY is required when RESEARCH_PROVIDER=people-data-labs',
    path: ['PDL_API_KEY'],
  })
  .superRefine((e, ctx) => {
    const conflict = retentionConflict(e);
    if (conflict) ctx.addIssue({ code: 'custom', message: conflict, path: ['PERSONAL_DATA_RETENTION_MONTHS'] });
  });

/** Parses an environment record; throws one readable error listing every bad setting. */
export function parseEnv(env: Record<string, string | undefined>): Env {
  const result = EnvRules.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}
