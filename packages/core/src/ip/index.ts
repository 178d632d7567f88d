export { consensus } from './consensus.ts';
export { countryTableFromMmdb } from './country.ts';
export { BestFit, FindBestFitInput, findBestFit } from './find-best-fit.ts';
export { IdentifyCompanyInput, IpLookupResult, identifyCompany } from './identify-company.ts';
export { storeCompanies, storeRanges } from './import-store.ts';
export { parseCidrList, parseCloudRanges, parseCompanyCsv } from './importers.ts';
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
export { cleanCompanyName, type OwnershipOptions, type OwnershipRules, OwnershipSource } from './ownership/index.ts';
export { queryProviders } from './providers/run.ts';
export { Ipv4Index, Ipv6Index } from './ranges.ts';
export { createRecentResults } from './recent-results.ts';
export { createApiLookupRecorder } from './record-api-lookup.ts';
export type { CachedVerdict, IpDeps, Verdict } from './resolve-ip.ts';
export { decodeAsnSnapshot, EDGE_DATA_FILES, encodeAsnSnapshot, gunzip } from './snapshot.ts';
export { type EnrichmentProvider, type IpProvider, type PersonMatcher, type ProviderAnswer, type SourceAnswer, TrafficType } from './types.ts';
