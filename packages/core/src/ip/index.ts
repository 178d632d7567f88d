export { consensus } from './consensus.ts';
export { countryTableFromMmdb } from './country.ts';
export { BestFit, FindBestFitInput, findBestFit } from './find-best-fit.ts';
export { IdentifyCompanyInput, IpLookupResult, identifyCompany } from './identify-company.ts';
export { storeCompanies, storeRanges } from './import-store.ts';
export { csvFields, parseCidrList, parseCloudRanges, parseCompanyCsv } from './importers.ts';
export {
  type AsnBase,
  type CompanyRow,
  classifyNetwork,
  type LocalAnswer,
  type LocalFacts,
  LocalIpData,
  type LocalLayers,
  type OverlayRow,
  type RangeList,
} from './local-data.ts';
export { cleanCompanyName } from './ownership/clean-company-name.ts';
export { type OwnershipRules, OwnershipSource } from './ownership/ownership-source.ts';
export { queryProviders } from './providers/run.ts';
export { Ipv4Index, Ipv6Index } from './ranges.ts';
export { createApiLookupRecorder } from './record-api-lookup.ts';
export { type IpDeps, resolveFree } from './resolve-ip.ts';
export { type CachedVerdict, createRecentResults } from './result-cache.ts';
export { listedDomainTraffic } from './reverse-dns/classify-reverse-name.ts';
export { decodeAsnSnapshot, EDGE_DATA_FILES, encodeAsnSnapshot, gunzip } from './shipped-data/snapshot.ts';
export { snapshotSources } from './shipped-data/snapshot-sources.ts';
export {
  type EnrichmentProvider,
  type IpProvider,
  type PersonMatcher,
  type ProviderAnswer,
  type SourceAnswer,
  TrafficType,
  type Verdict,
} from './types.ts';
