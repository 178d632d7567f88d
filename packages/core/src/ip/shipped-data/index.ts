/**
 * The shipped IP data's parsing and decoding, runtime-free: the network owners' CSVs, the range
 * lists, the IPv4 country table, and the snapshot the Edge Functions read. Hosts only read files
 * and call these (packages/host/src/ip-base.ts, supabase/functions/_shared/ip-sources.ts).
 */
export { type CountryTable, countryTableFromMmdb } from '../country.ts';
export type { AsnBase, RangeList, ShippedRanges } from '../local-data.ts';
export { type FileReader, type NetworkOwnerFiles, type OpenFile, parseNetworkOwners } from './network-owners.ts';
export { parseShippedRanges, type RangeListEntry, type RangeListFiles, rangeManifestFrom, shippedRangesFrom } from './range-lists.ts';
export { decodeAsnSnapshot, EDGE_DATA_FILES, encodeAsnSnapshot, gunzip } from './snapshot.ts';
export { snapshotSources } from './snapshot-sources.ts';
