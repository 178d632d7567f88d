import type { SharedRedis } from '../drivers/redis.ts';
import { consensus } from '../ip/consensus.ts';
import { createPeopleDataLabsEnrichment } from '../ip/enrichment.ts';
import type { AsnBase } from '../ip/local-data.ts';
import type { OperatorDatabaseLookup, OperatorDatabaseOptions } from '../ip/operator-databases/index.ts';
import { OwnershipSource } from '../ip/ownership/index.ts';
import { createPeopleDataLabsPersonMatcher } from '../ip/person-match.ts';
import { createIpapiIsProvider } from '../ip/providers/ipapi-is.ts';
import { createIpinfoProvider } from '../ip/providers/ipinfo.ts';
import { queryProviders } from '../ip/providers/run.ts';
import { createSnitcherProvider } from '../ip/providers/snitcher.ts';
import { createRdapSource, postgresRdapStore, rdapOptionsFromEnv } from '../ip/rdap/index.ts';
import type { FreeSources, IpDeps } from '../ip/resolve-ip.ts';
import { createRecentResults, IP_RESULTS_ERASED_CHANNEL } from '../ip/result-cache.ts';
import { createReverseDnsSource, type DnsResolver, type ReverseDnsOptions, reverseDnsOptions } from '../ip/reverse-dns/index.ts';
import { createIpStore, type IpStore, type IpStoreOptions } from '../ip/store.ts';
import type { EnrichmentProvider, IpProvider, PersonMatcher } from '../ip/types.ts';
import type { Logger } from '../kernel/context.ts';
import type { Database } from '../kernel/sql.ts';
import type { Env } from './config.ts';

/**
 * Where the shipped data comes from: the npm packages' files and the range lists in
 * packages/core/data/ip-ranges on the Node host, a snapshot of both shipped as static files on
 * Supabase. Each host supplies its own; the waterfall only reads them.
 */
export interface IpDataSources {
  base(): Promise<AsnBase>;
  country(): Promise<{ get(ip: string): { country_code?: string } | null }>;
}

/**
 * The free sources but the network's owner (which buildIpDeps makes from the loaded data): each
 * null when turned off or not available on this host.
 */
export type FreeSourceParts = Omit<FreeSources, 'ownership'>;

/**
 * Everything the waterfall needs except the providers and consensus, which the caller chooses. The
 * network-ownership source is made from the loaded ASN data; the other free sources are the
 * caller's (`free`; without it, none: a waterfall of the local data and the providers only).
 */
export async function buildIpDeps(
  db: Database,
  log: Logger,
  rest: Pick<IpDeps, 'providers' | 'providerTimeoutMs' | 'decide' | 'query' | 'enrichment' | 'personMatch' | 'recentResults' | 'sharedResults'>,
  sources: IpDataSources,
  opts: IpStoreOptions = {},
  free?: FreeSourceParts,
): Promise<IpDeps & { store: IpStore }> {
  const [base, country] = await Promise.all([sources.base(), sources.country()]);
  // The owner's vote is made with the local answer it is about (see OwnerJudge), so the source
  // that judges owners is the data's too.
  const ownership = free ? OwnershipSource.fromBase(base) : null;
  const store = await createIpStore(db, log, base, { ...opts, judge: ownership });
  // An erasure anywhere drops this process's recent results (result-cache.ts), where the host can listen.
  const recent = rest.recentResults;
  const erasures = recent && (opts.follow ?? true) ? await db.listen(IP_RESULTS_ERASED_CHANNEL, () => recent.clear()) : null;
  return {
    ...rest,
    ...(free ? { free: { ownership, ...free } } : {}),
    store: erasures
      ? {
          ...store,
          close: async () => {
            await erasures.unlisten();
            await store.close();
          },
        }
      : store,
    data: store.data,
    reload: store.reload,
    countryOf: (ip) => country.get(ip)?.country_code ?? null,
    async learn(ip, company) {
      await db`
        insert into ip_companies (network, domain, company_name, confidence, source)
        values (network(${ip}::inet), ${company.domain}, ${company.company_name}, ${company.confidence}, 'learned')
        on conflict (network) do update set domain = excluded.domain, company_name = excluded.company_name,
          confidence = excluded.confidence, updated_at = now()
        where ip_companies.source = 'learned'`;
      await store.reload();
    },
  };
}

/**
 * The paid providers enabled by their keys, the enrichment provider and the person matcher (both People
 * Data Labs, enabled by its key), from configuration.
 */
export function providersFor(env: Env): {
  providers: IpProvider[];
  enrichment: EnrichmentProvider | null;
  personMatch: PersonMatcher | null;
} {
  const providers: IpProvider[] = [];
  if (env.IPINFO_TOKEN) providers.push(createIpinfoProvider({ apiKey: env.IPINFO_TOKEN }));
  if (env.IPAPI_IS_KEY) providers.push(createIpapiIsProvider({ apiKey: env.IPAPI_IS_KEY }));
  if (env.SNITCHER_API_KEY) providers.push(createSnitcherProvider({ apiKey: env.SNITCHER_API_KEY }));
  return {
    providers,
    enrichment: env.PDL_API_KEY ? createPeopleDataLabsEnrichment({ apiKey: env.PDL_API_KEY }) : null,
    personMatch: env.PDL_API_KEY ? createPeopleDataLabsPersonMatcher({ apiKey: env.PDL_API_KEY }) : null,
  };
}

/**
 * Results shared by the replicas in Redis, in front of the Postgres result cache. Redis failing to
 * answer is a miss, and a write is skipped: Postgres holds every stored result and this process's
 * recent results sit in front, so a lookup loses nothing but the shortcut, and a skipped write costs
 * other replicas one Postgres read. A stored result never changes before it expires, so nothing
 * skipped during an outage can leave Redis stale afterwards.
 */
export function redisSharedResults(redis: SharedRedis): NonNullable<IpDeps['sharedResults']> {
  return {
    get: (key) => redis.get(key).catch(() => null),
    set: (key, value, ttlSeconds) => redis.set(key, value, ttlSeconds).catch(() => undefined),
    forget: async (pattern) => {
      await redis.eval(FORGET_LUA, 0, pattern);
    },
  };
}

/** SCAN and UNLINK every key matching ARGV[1]; answers how many went. */
const FORGET_LUA = `
local cursor = '0'
local n = 0
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    redis.call('UNLINK', k)
    n = n + 1
  end
until cursor == '0'
return n`;

/** What only a host can give the free sources: a DNS resolver, the operator's opened database files, a background runner. */
export interface FreeSourceHost {
  /** The runtime's resolver for reverse DNS (Node: node:dns; Deno: Deno.resolveDns); absent, no reverse DNS. */
  dnsResolver?: (opts: ReverseDnsOptions) => DnsResolver;
  /** `IP_DATABASES`, opened by the host at start (a bad file stops start-up there). */
  databases?: { lookUp(ip: string, classifiers?: Pick<OperatorDatabaseOptions, 'ownerTraffic'>): OperatorDatabaseLookup };
  /** Runs the RDAP cache's fills behind the lookups (CoreDeps.background). */
  background?: (name: string, task: () => Promise<unknown>) => void;
}

/** The free sources configuration turns on, with what the host gives them. */
export function freeSourcesFor(env: Env, db: Database, log: Logger, host: FreeSourceHost): FreeSourceParts {
  const dns = reverseDnsOptions(env);
  return {
    databases: host.databases ?? null,
    reverseDns: dns.enabled && host.dnsResolver ? createReverseDnsSource({ resolver: host.dnsResolver(dns), timeoutMs: dns.timeoutMs }) : null,
    rdap: env.RDAP
      ? createRdapSource({ store: postgresRdapStore(db), log, ...(host.background ? { background: host.background } : {}) }, rdapOptionsFromEnv(env))
      : null,
    paidAfterConfirmed: env.PAID_LOOKUPS === 'always',
  };
}

/** The waterfall's dependencies from configuration: providers, consensus, the free sources, caches and the kept-current local data. */
export async function ipDepsFor(
  env: Env,
  db: Database,
  log: Logger,
  redis: SharedRedis | undefined,
  sources: IpDataSources,
  opts: IpStoreOptions = {},
  host: FreeSourceHost = {},
): Promise<IpDeps & { store: IpStore }> {
  const { providers, enrichment, personMatch } = providersFor(env);
  return buildIpDeps(
    db,
    log,
    {
      providers,
      enrichment,
      personMatch,
      providerTimeoutMs: env.PROVIDER_TIMEOUT_MS,
      decide: (answers) => consensus(answers, { weights: env.PROVIDER_WEIGHTS }),
      query: queryProviders,
      recentResults: createRecentResults(),
      ...(redis ? { sharedResults: redisSharedResults(redis) } : {}),
    },
    sources,
    opts,
    freeSourcesFor(env, db, log, host),
  );
}
