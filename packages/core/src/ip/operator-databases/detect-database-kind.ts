/**
 * The operator's own IP databases (IP_DATABASES) are told apart by the `databaseType` in each file's
 * metadata, never by the file's name: operators rename files, and a name says nothing about the
 * fields inside.
 */

/** The databases Sightline reads, each one record layout. */
export type OperatorDatabaseKind =
  | 'geoip2-enterprise'
  | 'geoip2-isp'
  | 'geoip2-domain'
  | 'geoip2-connection-type'
  | 'geoip2-anonymous-ip'
  | 'geolite2-asn'
  | 'ipinfo-lite';

/**
 * Whose opinion a database is. Files of one vendor combine into one answer (one vote in consensus):
 * MaxMind's ISP, Domain and Connection-Type files are three views of one vendor's data, not three
 * independent witnesses.
 */
export type OperatorDatabaseVendor = 'maxmind' | 'ipinfo-lite';

export interface OperatorDatabaseKindInfo {
  kind: OperatorDatabaseKind;
  vendor: OperatorDatabaseVendor;
  /** The product as its vendor names it, for messages and reasons. */
  product: string;
}

/**
 * MaxMind writes the product name as the whole `databaseType` ("GeoIP2-ISP"; its test databases carry
 * the same). IPinfo writes `ipinfo <file name>`: "ipinfo bundle_location_lite.mmdb" for IPinfo Lite,
 * "ipinfo bundle_location_lite_sample.mmdb" for its published sample, so Lite is matched on that stem.
 */
const MAXMIND_TYPES: Readonly<Record<string, OperatorDatabaseKind>> = {
  'GeoIP2-Enterprise': 'geoip2-enterprise',
  'GeoIP2-ISP': 'geoip2-isp',
  'GeoIP2-Domain': 'geoip2-domain',
  'GeoIP2-Connection-Type': 'geoip2-connection-type',
  'GeoIP2-Anonymous-IP': 'geoip2-anonymous-ip',
  'GeoLite2-ASN': 'geolite2-asn',
};
const IPINFO_LITE = /^ipinfo bundle_location_lite(_sample)?\.mmdb$/;

/** The products Sightline reads, as an operator would look for them (for error messages). */
export const KNOWN_DATABASE_PRODUCTS: readonly string[] = [...Object.keys(MAXMIND_TYPES), 'IPinfo Lite'];

/** The kind of a database from its metadata's `databaseType`, or null for one Sightline does not read. */
export function detectDatabaseKind(databaseType: string): OperatorDatabaseKindInfo | null {
  const type = databaseType.trim();
  if (Object.hasOwn(MAXMIND_TYPES, type)) {
    const kind = MAXMIND_TYPES[type];
    if (kind) return { kind, vendor: 'maxmind', product: type };
  }
  if (IPINFO_LITE.test(type)) return { kind: 'ipinfo-lite', vendor: 'ipinfo-lite', product: 'IPinfo Lite' };
  return null;
}
