import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { EDGE_DATA_FILES, encodeAsnSnapshot } from '@sightline/core';
import { countryDatabaseFile, readAsnBase } from './ip-base.ts';

/**
 * `npm run build:edge-data`: the local IP data for the Supabase Edge Functions, which cannot read
 * the npm packages' 60 MB of files at cold start and may ship at most 20 MB per function. Writes
 * the snapshot of the shipped base (snapshot.ts: the network owners and the shipped VPN and hosting
 * range lists, about 3 MB gzipped) and the country MMDB gzipped (about 4 MB) to
 * supabase/functions/_shared/ip-data/, which config.toml lists as the IP functions' static files.
 * Generated from the installed packages and packages/core/data/ip-ranges at deploy time, so never
 * committed.
 */
export const EDGE_DATA_DIR = fileURLToPath(new URL('../../../supabase/functions/_shared/ip-data/', import.meta.url));

export async function buildEdgeData(outDir = EDGE_DATA_DIR): Promise<{ file: string; bytes: number }[]> {
  const pack = promisify(gzip);
  const files: [string, Uint8Array][] = [
    [EDGE_DATA_FILES.asn, await pack(encodeAsnSnapshot(await readAsnBase()), { level: 9 })],
    [EDGE_DATA_FILES.country, await pack(await readFile(countryDatabaseFile()), { level: 9 })],
  ];
  await mkdir(outDir, { recursive: true });
  for (const [name, bytes] of files) await writeFile(path.join(outDir, name), bytes);
  return files.map(([name, bytes]) => ({ file: path.join(outDir, name), bytes: bytes.byteLength }));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && import.meta.url.endsWith('/edge-data.ts')) {
  buildEdgeData(process.argv[2]).then(
    (files) => process.stdout.write(files.map((f) => `wrote ${f.file} (${(f.bytes / 1e6).toFixed(1)} MB)\n`).join('')),
    (err: unknown) => {
      process.stderr.write(`build:edge-data: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
