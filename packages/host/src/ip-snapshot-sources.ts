import { Buffer } from 'node:buffer';
import { decodeAsnSnapshot, gunzip, type IpDataSources } from '@sightline/core';
import { type CountryResponse, Reader } from 'maxmind';

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
