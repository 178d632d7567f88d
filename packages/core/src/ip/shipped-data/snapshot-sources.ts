import type { AsnBase } from '../local-data.ts';
import { decodeAsnSnapshot, EDGE_DATA_FILES, gunzip } from './snapshot.ts';

/**
 * The IP data sources of a runtime that reads the shipped data from the snapshot `npm run
 * build:edge-data` writes (EDGE_DATA_FILES; the Supabase Edge Functions, which cannot read the npm
 * packages' files): `read` returns a file's bytes, and the snapshot is decoded here. The country
 * database is a MaxMind DB, which the host opens with its reader (`openCountry`, given the
 * gunzipped bytes).
 */
export function snapshotSources<C>(
  read: (name: string) => Promise<Uint8Array<ArrayBuffer>>,
  openCountry: (bytes: Uint8Array<ArrayBuffer>) => C,
): { base(): Promise<AsnBase>; country(): Promise<C> } {
  return {
    base: async () => decodeAsnSnapshot(await gunzip(await read(EDGE_DATA_FILES.asn))),
    country: async () => openCountry(await gunzip(await read(EDGE_DATA_FILES.country))),
  };
}
