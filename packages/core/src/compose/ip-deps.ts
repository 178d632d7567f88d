import type { SharedRedis } from '../drivers/redis.ts';
import { consensus } from '../ip/consensus.ts';
import { createPeopleDataLabsEnrichment } from '../ip/enrichment.ts';
import type { AsnBase } from '../ip/local-data.ts';
import { createPeopleDataLabsPersonMatcher } from '../ip/person-match.ts';
import { createIpapiIsProvider } from '../ip/providers/ipapi-is.ts';
import { createIpinfoProvider } from '../ip/providers/ipinfo.ts';
import { queryProviders } from '../ip/providers/run.ts';
import { createSnitcherProvider } from '../ip/providers/snitcher.ts';
import { createRecentResults } from '../ip/recent-results.ts';
import type { IpDeps } from '../ip/resolve-ip.ts';
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

/** Everything the waterfall needs except the providers and consensus, which the caller chooses. */
export async function buildIpDeps(
  db: Database,
  log: Logger,
  rest: Pick<IpDeps, 'providers' | 'providerTimeoutMs' | 'decide' | 'query' | 'enrichment' | 'personMatch' | 'recentResults' | 'sharedResults'>,
  sources: IpDataSources,
  opts: IpStoreOptions = {},
): Promise<IpDeps & { store: IpStore }> {
  const [base, country] = await Promise.all([sources.base(), sources.country()]);
  const store = await createIpStore(db, log, base, opts);
  return {
    ...rest,
    store,
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
  };
}

/** The waterfall's dependencies from configuration: providers, consensus, caches and the kept-current local data. */
export async function ipDepsFor(
  env: Env,
  db: Database,
  log: Logger,
  redis: SharedRedis | undefined,
  sources: IpDataSources,
  opts: IpStoreOptions = {},
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
  );
}
