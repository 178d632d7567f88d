import { Buffer } from 'node:buffer';
import { decodeAsnSnapshot, EDGE_DATA_FILES, gunzip, type IpDataSources } from '@sightline/core';
import { type CountryResponse, Reader } from 'maxmind';

/**
 * The IP data sources of a Supabase function: the snapshot `npm run build:edge-data` writes
 * (EDGE_DATA_FILES), shipped beside the function as static files, because an Edge Function cannot
 * read the npm packages' files. `read` returns a file's bytes. The ASN snapshot is decoded by core;
 * the country database is a MaxMind DB, read with `maxmind` (which reads from a Buffer).
 */
export function snapshotIpSources(read: (name: string) => Promise<Uint8Array<ArrayBuffer>>): IpDataSources {
  return {
    base: async () => decodeAsnSnapshot(await gunzip(await read(EDGE_DATA_FILES.asn))),
    country: async () => new Reader<CountryResponse & { country_code?: string }>(Buffer.from(await gunzip(await read(EDGE_DATA_FILES.country)))),
  };
}
