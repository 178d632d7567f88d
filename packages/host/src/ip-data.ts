import {
  consensus,
  createIpapiIsProvider,
  createRecentResults,
  createIpinfoProvider,
  createPeopleDataLabsEnrichment,
  createSnitcherProvider,
  queryProviders,
  type EnrichmentProvider,
  type Env,
  type IpProvider,
  LocalIpData,
  parseCidr,
  type CompanyRow,
  type IpDeps,
  type Logger,
  type OverlayRow,
  type RangeKind,
  type Sql,
  type Database,
  type AsnBase,
  decodeAsnSnapshot,
  gunzip,
} from '@sightline/core';
import { Buffer } from 'node:buffer';
import { Reader, type CountryResponse } from 'maxmind';
import type { SharedRedis } from './redis.ts';

/**
 * Where the shipped data comes from: the npm packages' files and the range lists in
 * packages/core/data/ip-ranges on the Node host (ip-base.ts), a snapshot of both shipped as static
 * files on Supabase (edge-data.ts). This module imports neither, so the Deno entry points can use it.
 */
export interface IpDataSources {
  base(): Promise<AsnBase>;
  country(): Promise<{ get(ip: string): { country_code?: string } | null }>;
}

/** The files `npm run build:edge-data` writes (edge-data.ts) and snapshotIpSources reads. */
export const EDGE_DATA_FILES = { asn: 'asn.bin.gz', country: 'country.mmdb.gz' } as const;

/**
 * Sources from a snapshot (edge-data.ts), for runtimes that cannot read the npm packages' files:
 * the Supabase Edge Functions ship the two files as static files. `read` returns a file's bytes.
 */
export function snapshotIpSources(read: (name: string) => Promise<Uint8Array<ArrayBuffer>>): IpDataSources {
  return {
    base: async () => decodeAsnSnapshot(await gunzip(await read(EDGE_DATA_FILES.asn))),
    country: async () => new Reader<CountryResponse & { country_code?: string }>(Buffer.from(await gunzip(await read(EDGE_DATA_FILES.country)))),
  };
}

/** The imported and learned layers, from Postgres. */
export async function readLayers(db: Sql) {
  const overlays4: OverlayRow<number>[] = [];
  const overlays6: OverlayRow<bigint>[] = [];
  for (const r of await db<{ network: string; kind: RangeKind; provider: string | null }>`
      select network::text as network, kind, provider from ip_ranges`) {
    const c = parseCidr(r.network);
    if (c?.version === 4) overlays4.push({ start: c.start, end: c.end, kind: r.kind, provider: r.provider });
    else if (c?.version === 6) overlays6.push({ start: c.start, end: c.end, kind: r.kind, provider: r.provider });
  }
  const companies4: CompanyRow<number>[] = [];
  const companies6: CompanyRow<bigint>[] = [];
  for (const r of await db<{ network: string; domain: string; company_name: string; confidence: number; source: 'import' | 'learned' }>`
      select network::text as network, domain, company_name, confidence::float8 as confidence, source from ip_companies`) {
    const c = parseCidr(r.network);
    const row = { domain: r.domain, company_name: r.company_name, confidence: r.confidence, source: r.source };
    if (c?.version === 4) companies4.push({ start: c.start, end: c.end, ...row });
    else if (c?.version === 6) companies6.push({ start: c.start, end: c.end, ...row });
  }
  return { overlays4, overlays6, companies4, companies6 };
}

export interface IpStore {
  data(): LocalIpData;
  /**
   * Re-reads the imported and learned layers from Postgres. Resolves once a read that began after
   * the call is in place, so a caller sees its own committed change.
   */
  reload(): Promise<void>;
  /** Stops following the database's change notifications. */
  close(): Promise<void>;
}

export interface IpStoreOptions {
  /** LISTEN for changes and reload (default); off where a process cannot hold a connection for it. */
  follow?: boolean;
}

/** What migration 0006's triggers notify when ip_ranges or ip_companies change. */
export const IP_DATA_CHANGED_CHANNEL = 'sl_ip_data_changed';

/**
 * The local data, kept current: whoever changes the imported or learned layers (an operator import
 * run from another machine, a record another replica learned) commits, the database announces it,
 * and every process reloads. It listens before the first read, so nothing committed after that
 * read can be missed, and reloads whenever its listening connection comes back (notifications sent
 * while it was away are lost).
 */
export async function createIpStore(db: Database, log: Logger, base: AsnBase, { follow = true }: IpStoreOptions = {}): Promise<IpStore> {
  const started = performance.now();
  let current: LocalIpData | undefined;
  let missed = false;
  let inFlight: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const load = async () => {
    const layers = await readLayers(db);
    current = (current as LocalIpData).withLayers(layers);
  };
  const reload = (): Promise<void> => {
    if (!inFlight) {
      inFlight = load().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    }
    // The read in progress may predate the caller's change: one more after it serves every caller
    // that arrives meanwhile.
    queued ??= inFlight
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return reload();
      });
    return queued;
  };
  const onChange = () => {
    if (!current) {
      missed = true;
      return;
    }
    reload().catch((err: unknown) => log.warn('local IP data reload failed', { error: err instanceof Error ? err.message : String(err) }));
  };
  let listening = false;
  const listener = follow
    ? await db.listen(IP_DATA_CHANGED_CHANNEL, onChange, () => {
        // The first call is the initial LISTEN, before the first read; later ones are reconnects.
        if (listening) onChange();
        listening = true;
      })
    : undefined;
  current = LocalIpData.fromBase(base, await readLayers(db));
  if (missed) await reload();
  log.info('local IP data loaded', { ms: Math.round(performance.now() - started), ...current.stats });
  return {
    data: () => current as LocalIpData,
    reload,
    close: async () => {
      await listener?.unlisten();
    },
  };
}

/** Everything the waterfall needs except the providers and consensus, which the caller chooses. */
export async function buildIpDeps(
  db: Database,
  log: Logger,
  rest: Pick<IpDeps, 'providers' | 'providerTimeoutMs' | 'decide' | 'query' | 'enrichment' | 'recent' | 'hotCache'>,
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

/** The paid providers enabled by their keys, and the enrichment provider, from configuration. */
export function providersFor(env: Env): { providers: IpProvider[]; enrichment: EnrichmentProvider | null } {
  const providers: IpProvider[] = [];
  if (env.IPINFO_TOKEN) providers.push(createIpinfoProvider({ apiKey: env.IPINFO_TOKEN }));
  if (env.IPAPI_IS_KEY) providers.push(createIpapiIsProvider({ apiKey: env.IPAPI_IS_KEY }));
  if (env.SNITCHER_API_KEY) providers.push(createSnitcherProvider({ apiKey: env.SNITCHER_API_KEY }));
  return { providers, enrichment: env.PDL_API_KEY ? createPeopleDataLabsEnrichment({ apiKey: env.PDL_API_KEY }) : null };
}

/**
 * A Redis hot cache in front of the Postgres result cache, shared by the replicas. Redis failing to
 * answer is a miss, and a write is skipped: Postgres holds every stored result and this process's
 * recent results sit in front, so a lookup loses nothing but the shortcut, and a skipped write costs
 * other replicas one Postgres read. A stored result never changes before it expires, so nothing
 * skipped during an outage can leave Redis stale afterwards.
 */
export function redisHotCache(redis: SharedRedis): NonNullable<IpDeps['hotCache']> {
  return {
    get: (key) => redis.get(key).catch(() => null),
    set: (key, value, ttlSeconds) => redis.set(key, value, ttlSeconds).catch(() => undefined),
  };
}

export async function ipDepsFor(
  env: Env,
  db: Database,
  log: Logger,
  redis: SharedRedis | undefined,
  sources: IpDataSources,
  opts: IpStoreOptions = {},
): Promise<IpDeps & { store: IpStore }> {
  const { providers, enrichment } = providersFor(env);
  return buildIpDeps(
    db,
    log,
    {
    providers,
    enrichment,
    providerTimeoutMs: env.PROVIDER_TIMEOUT_MS,
    decide: (answers) => consensus(answers, { weights: env.PROVIDER_WEIGHTS }),
    query: queryProviders,
      recent: createRecentResults(),
      ...(redis ? { hotCache: redisHotCache(redis) } : {}),
    },
    sources,
    opts,
  );
}
