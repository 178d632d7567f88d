import { z } from 'zod';
import { type DnsServer, parseDnsServers } from './dns-servers.ts';

/** The most a reverse lookup may take, PTR and forward confirmation together (issue 29: ≤ 1 s). */
export const RDNS_MAX_TIMEOUT_MS = 1000;

/**
 * The reverse-DNS source's settings, in the environment's words, for the one validated environment
 * (config.ts) to take in (`EnvSchema.extend(ReverseDnsSettings.shape)`):
 * - `RDNS`: 0 turns the source off (no address leaves the server for a resolver); on by default.
 * - `DNS_SERVERS`: comma-separated `host[:port]` resolvers (IPv6 in brackets); unset, the system's.
 * - `RDNS_TIMEOUT_MS`: the budget of one lookup, PTR and forward confirmation together.
 */
export const ReverseDnsSettings = z.object({
  RDNS: z
    .enum(['0', '1', 'true', 'false', ''])
    .default('1')
    .transform((v) => v !== '0' && v !== 'false'),
  DNS_SERVERS: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      const servers = parseDnsServers(raw);
      if (Array.isArray(servers)) return servers;
      ctx.addIssue({ code: 'custom', message: `DNS_SERVERS ${servers.refused}` });
      return z.NEVER;
    }),
  RDNS_TIMEOUT_MS: z.coerce.number().int().min(50).max(RDNS_MAX_TIMEOUT_MS).default(RDNS_MAX_TIMEOUT_MS),
});

export type ReverseDnsSettings = z.infer<typeof ReverseDnsSettings>;

/** What the composition passes to the host's resolver and to the source. */
export interface ReverseDnsOptions {
  enabled: boolean;
  /** Empty: the system's resolvers. */
  servers: DnsServer[];
  timeoutMs: number;
}

/** The options a validated environment gives. */
export function reverseDnsOptions(settings: ReverseDnsSettings): ReverseDnsOptions {
  return { enabled: settings.RDNS, servers: settings.DNS_SERVERS, timeoutMs: settings.RDNS_TIMEOUT_MS };
}

/**
 * Reads the three settings from an environment record, for a host that parses them on its own;
 * throws one readable error naming each bad setting, as `parseEnv` does.
 */
export function readReverseDnsOptions(env: Record<string, string | undefined>): ReverseDnsOptions {
  const result = ReverseDnsSettings.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid configuration:\n${lines.join('\n')}`);
  }
  return reverseDnsOptions(result.data);
}
