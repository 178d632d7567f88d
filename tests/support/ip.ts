import {
  buildIpDeps,
  consensus,
  createRecentResults,
  type Database,
  type EnrichmentProvider,
  type IpDataSources,
  type IpDeps,
  type IpProvider,
  type ProviderAnswer,
  queryProviders,
  silentLogger,
} from '@sightline/core';
import { packageIpSources } from '@sightline/host';

/** The real waterfall (shipped ASN and country data, layers from the test database) with chosen providers. */
export function realIpDeps(
  opts: { providers?: IpProvider[]; enrichment?: EnrichmentProvider | null; timeoutMs?: number; recent?: boolean; sources?: IpDataSources } = {},
) {
  return (db: Database): Promise<IpDeps> =>
    buildIpDeps(
      db,
      silentLogger,
      {
        providers: opts.providers ?? [],
        enrichment: opts.enrichment ?? null,
        providerTimeoutMs: opts.timeoutMs ?? 500,
        decide: (answers) => consensus(answers, { weights: {} }),
        query: queryProviders,
        ...(opts.recent ? { recentResults: createRecentResults() } : {}),
      },
      opts.sources ?? packageIpSources,
    );
}

/**
 * A provider port implementation for tests: answers from a table, counts its calls. (The HTTP
 * adapters for real providers are tested against msw in ip-providers.test.ts.)
 */
export function tableProvider(name: string, table: Record<string, Partial<ProviderAnswer> | 'fail' | 'hang'>) {
  const calls: string[] = [];
  const provider: IpProvider = {
    name,
    async lookup(ip, signal) {
      calls.push(ip);
      const entry = table[ip];
      if (entry === undefined) return null;
      if (entry === 'fail') throw new Error(`${name} answered 503`);
      if (entry === 'hang') {
        return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      }
      return { provider: name, domain: null, company_name: null, traffic_type: null, confidence: null, country_code: null, ...entry };
    },
  };
  return { provider, calls };
}
