import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import {
  consensus,
  createIpapiIsProvider,
  createMemoryHotCache,
  createIpinfoProvider,
  createPeopleDataLabsEnrichment,
  createSnitcherProvider,
  queryProviders,
  type EnrichmentProvider,
  type Env,
  type IpProvider,
  Ipv4Index,
  Ipv6Index,
  LocalIpData,
  parseCidr,
  type CompanyRow,
  type IpDeps,
  type Logger,
  type OverlayRow,
  type RangeKind,
  type Sql,
} from '@sightline/core';
import type { Redis } from 'ioredis';
import maxmind, { type CountryResponse, type Reader } from 'maxmind';

const require = createRequire(import.meta.url);
const packageDir = (name: string) => path.dirname(require.resolve(`${name}/package.json`));

/**
 * Reads the @ip-location-db/asn numeric CSVs (`start,end,asn,name`; names quoted when they hold a
 * comma) straight into typed arrays: no per-row objects, and one string per distinct owner.
 */
export async function readAsnBase(): Promise<{ owners: { asn: number; name: string }[]; asn4: Ipv4Index; asn6: Ipv6Index }> {
  const dir = packageDir('@ip-location-db/asn');
  const owners: { asn: number; name: string }[] = [];
  // asn → name → owner index; most ASNs have one name, so this stays small.
  const ownerIndex = new Map<number, Map<string, number>>();
  const ownerOf = (asn: number, name: string) => {
    let names = ownerIndex.get(asn);
    if (!names) ownerIndex.set(asn, (names = new Map()));
    let i = names.get(name);
    if (i === undefined) {
      i = owners.push({ asn, name }) - 1;
      names.set(name, i);
    }
    return i;
  };
  const scan = (buf: Buffer, row: (start: string, end: string, owner: number) => void) => {
    let pos = 0;
    while (pos < buf.length) {
      let end = buf.indexOf(10, pos);
      if (end < 0) end = buf.length;
      const c1 = buf.indexOf(44, pos);
      const c2 = buf.indexOf(44, c1 + 1);
      const c3 = buf.indexOf(44, c2 + 1);
      if (c1 > pos && c3 > 0 && c3 < end) {
        let name = buf.toString('utf8', c3 + 1, buf[end - 1] === 13 ? end - 1 : end);
        if (name.startsWith('"')) name = name.slice(1, -1).replaceAll('""', '"');
        row(buf.toString('latin1', pos, c1), buf.toString('latin1', c1 + 1, c2), ownerOf(Number(buf.toString('latin1', c2 + 1, c3)), name));
      }
      pos = end + 1;
    }
  };
  const lines = (buf: Buffer) => {
    let n = 0;
    for (let i = buf.indexOf(10); i >= 0; i = buf.indexOf(10, i + 1)) n++;
    return n + 1;
  };

  const v4 = await readFile(path.join(dir, 'asn-ipv4-num.csv'));
  const cap = lines(v4);
  const starts = new Uint32Array(cap);
  const ends = new Uint32Array(cap);
  const values = new Int32Array(cap);
  let n = 0;
  scan(v4, (s, e, o) => {
    starts[n] = Number(s);
    ends[n] = Number(e);
    values[n++] = o;
  });
  const asn4 = Ipv4Index.fromSorted(starts, ends, values, n);

  const v6 = await readFile(path.join(dir, 'asn-ipv6-num.csv'));
  const six = Ipv6Index.sortedBuilder(lines(v6));
  scan(v6, (s, e, o) => six.push(BigInt(s), BigInt(e), o));
  const asn6 = six.done();
  return { owners, asn4, asn6 };
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

/** The combined IPv4+IPv6 country database (an IPv4-only file answers wrongly for IPv6). */
export async function openCountryReader(): Promise<Reader<CountryResponse & { country_code?: string }>> {
  const file = path.join(packageDir('@ip-location-db/geo-whois-asn-country-mmdb'), 'geo-whois-asn-country.mmdb');
  return maxmind.open<CountryResponse & { country_code?: string }>(file);
}

export interface IpStore {
  data(): LocalIpData;
  /** Re-reads the imported and learned layers from Postgres. */
  reload(): Promise<void>;
}

export async function createIpStore(db: Sql, log: Logger): Promise<IpStore> {
  const started = performance.now();
  let current = LocalIpData.fromBase(await readAsnBase(), await readLayers(db));
  log.info('local IP data loaded', { ms: Math.round(performance.now() - started), ...current.stats });
  return {
    data: () => current,
    async reload() {
      current = current.withLayers(await readLayers(db));
    },
  };
}

/** Everything the waterfall needs except the providers and consensus, which the caller chooses. */
export async function buildIpDeps(
  db: Sql,
  log: Logger,
  rest: Pick<IpDeps, 'providers' | 'providerTimeoutMs' | 'decide' | 'query' | 'enrichment' | 'hotCache'>,
): Promise<IpDeps & { store: IpStore }> {
  const store = await createIpStore(db, log);
  const country = await openCountryReader();
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

/** A Redis hot cache in front of the Postgres result cache. */
export function redisHotCache(redis: Redis): NonNullable<IpDeps['hotCache']> {
  return {
    get: (key) => redis.get(key),
    set: async (key, value, ttlSeconds) => {
      await redis.set(key, value, 'EX', ttlSeconds);
    },
  };
}

export async function ipDepsFor(env: Env, db: Sql, log: Logger, redis: Redis | undefined): Promise<IpDeps & { store: IpStore }> {
  const { providers, enrichment } = providersFor(env);
  return buildIpDeps(db, log, {
    providers,
    enrichment,
    providerTimeoutMs: env.PROVIDER_TIMEOUT_MS,
    decide: (answers) => consensus(answers, { weights: env.PROVIDER_WEIGHTS }),
    query: queryProviders,
    hotCache: redis ? redisHotCache(redis) : createMemoryHotCache(),
  });
}
