/**
 * Forward-confirmed reverse DNS (issue 29 §2.2): one free source of the identification waterfall.
 * The host injects a DnsResolver (packages/host/src/dns-resolver.ts on Node,
 * supabase/functions/_shared/dns-resolver.ts on Deno); the composition reads RDNS, DNS_SERVERS and
 * RDNS_TIMEOUT_MS once (ReverseDnsSettings) and builds the source with createReverseDnsSource.
 */
export { classifyReverseName, listedDomainTraffic, RDNS_CONFIDENCE, RDNS_SOURCE } from './classify-reverse-name.ts';
export { confirmReverseName, MAX_PTR_NAMES, normalisePtrName } from './confirm-reverse-name.ts';
export { type AddressRecordType, type DnsResolver, formatAddress, lookupAddress, reverseLookupName, sameAddress } from './dns-resolver.ts';
export { type DnsServer, dnsServerText, parseDnsServers } from './dns-servers.ts';
export {
  createReverseDnsSource,
  RDNS_ANSWER_TTL_MS,
  RDNS_CACHE_MAX_ENTRIES,
  RDNS_FAILURE_TTL_MS,
  RDNS_MAX_IN_FLIGHT,
  type ReverseDnsSource,
  type ReverseDnsSourceOptions,
} from './look-up-reverse-dns.ts';
export {
  type InstitutionSuffixes,
  type RdnsDomain,
  type RdnsDomainList,
  type RdnsDomainType,
  rdnsDomainList,
  SHIPPED_RDNS_DOMAINS,
} from './rdns-domains.ts';
export { recogniseDynamicName } from './recognise-dynamic-name.ts';
export {
  RDNS_MAX_TIMEOUT_MS,
  type ReverseDnsOptions,
  ReverseDnsSettings,
  readReverseDnsOptions,
  reverseDnsOptions,
} from './reverse-dns-options.ts';
