import { Buffer } from 'node:buffer';
import { type IpDataSources, snapshotSources } from '@sightline/core';
import { type CountryResponse, Reader } from 'maxmind';

/**
 * The IP data sources of a Supabase function: the snapshot `npm run build:edge-data` writes,
 * shipped beside the function as static files, because an Edge Function cannot read the npm
 * packages' files. `read` returns a file's bytes; core finds, gunzips and decodes the snapshot
 * (snapshotSources). The country database is a MaxMind DB, read with `maxmind` (which reads from
 * a Buffer).
 */
export function snapshotIpSources(read: (name: string) => Promise<Uint8Array<ArrayBuffer>>): IpDataSources {
  return snapshotSources(read, (bytes) => new Reader<CountryResponse & { country_code?: string }>(Buffer.from(bytes)));
}
