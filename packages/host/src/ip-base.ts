import { open, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
// The shipped data's folder of core rather than the package's entry, which would bring the whole
// service along: a process that only needs the data (the memory probe of `npm run bench -- ip`)
// carries nothing else.
import {
  type AsnBase,
  type CountryTable,
  countryTableFromMmdb,
  type OpenFile,
  parseNetworkOwners,
  parseShippedRanges,
  type RangeListEntry,
  rangeManifestFrom,
  type ShippedRanges,
} from '@sightline/core/ip/shipped-data/index';
import { type CountryResponse, Reader } from 'maxmind';

export { type RangeListEntry, shippedRangesFrom } from '@sightline/core/ip/shipped-data/index';

/**
 * The shipped local data files, read from disk on the Node host and parsed by core
 * (core/src/ip/shipped-data): this file only finds and reads them.
 */
const require = createRequire(import.meta.url);
const packageDir = (name: string) => path.dirname(require.resolve(`${name}/package.json`));

/**
 * The shipped range lists and their manifest (packages/core/data/ip-ranges/), found through the
 * core package rather than this file's own location, so the sources, the `npm run build` bundle
 * and the bench's probe bundle (which live at different depths) all find the same folder.
 */
export const shippedRangesDir = () => path.join(path.dirname(require.resolve('@sightline/core')), '..', 'data', 'ip-ranges');

/**
 * Everything shipped for the local waterfall: the network owners, the shipped VPN and hosting range
 * lists and the IPv4 country table. What `npm start`, `npm run serve`, `npm run build:edge-data` and
 * the benches load.
 */
export async function readAsnBase(): Promise<AsnBase> {
  const owners = await readNetworkOwners();
  return { ...owners, ranges: await readShippedRanges(), country: await readCountryTable() };
}

/** A file opened for core to read in pieces (its reused buffer: the 21 MB table is never held whole). */
const openFile =
  (file: string): OpenFile =>
  async () => {
    const fh = await open(file, 'r');
    return {
      name: file,
      read: async (into, offset, length) => (await fh.read(into, offset, length)).bytesRead,
      close: () => fh.close(),
    };
  };

/** The @ip-location-db/asn package's network owners (its numeric CSVs), parsed by core. */
export async function readNetworkOwners(): Promise<Omit<AsnBase, 'ranges'>> {
  const dir = packageDir('@ip-location-db/asn');
  return parseNetworkOwners({ v4: openFile(path.join(dir, 'asn-ipv4-num.csv')), v6: openFile(path.join(dir, 'asn-ipv6-num.csv')) });
}

/** Reads and checks the manifest: it decides answers, so a malformed entry stops the start. */
export async function readRangeManifest(dir = shippedRangesDir()): Promise<RangeListEntry[]> {
  return rangeManifestFrom(await readFile(path.join(dir, 'lists.json'), 'utf8'), `${dir}/lists.json`);
}

/** Reads the shipped range lists the manifest names, parsed by core (a line that is not a CIDR is skipped). */
export async function readShippedRanges(dir = shippedRangesDir()): Promise<ShippedRanges> {
  return parseShippedRanges({
    manifestName: `${dir}/lists.json`,
    manifest: () => readFile(path.join(dir, 'lists.json'), 'utf8'),
    read: (f) => readFile(path.join(dir, f)),
  });
}

/** The combined IPv4+IPv6 country database (an IPv4-only file answers wrongly for IPv6). */
export const countryDatabaseFile = () => path.join(packageDir('@ip-location-db/geo-whois-asn-country-mmdb'), 'geo-whois-asn-country.mmdb');

/**
 * The country database's bytes, read once per process: its reader (which answers IPv6) and the
 * IPv4 country table are made from the same 7.5 MB, where reading the file for each left a second
 * copy as garbage at the end of the load, which an idle server then carried in its resident set.
 */
let countryBytes: Promise<Buffer> | undefined;
const readCountryBytes = (): Promise<Buffer> => {
  countryBytes ??= readFile(countryDatabaseFile()).catch((err: unknown) => {
    countryBytes = undefined;
    throw err;
  });
  return countryBytes;
};

/** The `maxmind` reader on the shipped country database (no decoded-record cache: a country record is one small map). */
export async function openCountryReader(): Promise<Reader<CountryResponse & { country_code?: string }>> {
  return new Reader<CountryResponse & { country_code?: string }>(await readCountryBytes());
}

/**
 * The IPv4 part of the shipped country database as a range table (core/src/ip/country.ts), each
 * range holding what the `maxmind` reader answers there, read as buildIpDeps's `countryOf` reads it.
 * About 340,000 ranges, 4 MB.
 */
export async function readCountryTable(): Promise<CountryTable> {
  const bytes = await readCountryBytes();
  const reader = new Reader<CountryResponse & { country_code?: string }>(bytes);
  const { nodeCount, recordSize, ipVersion } = reader.metadata;
  return countryTableFromMmdb({ bytes, nodeCount, recordSize, ipVersion }, (ip) => reader.get(ip)?.country_code ?? null);
}

/** The Node host's data sources: the npm packages' files (see ip-data.ts). */
export const packageIpSources = { base: readAsnBase, country: openCountryReader };
