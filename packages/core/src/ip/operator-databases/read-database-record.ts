/**
 * One record of an operator's database → the facts Sightline uses, in one vocabulary for every
 * product. The fields are the ones MaxMind and IPinfo document for each database:
 *
 * - GeoIP2-Enterprise: `traits.user_type`, `traits.connection_type`, `traits.organization`,
 *   `traits.isp`, `traits.domain`, `traits.autonomous_system_number` / `_organization`,
 *   `traits.mobile_country_code` / `mobile_network_code`, the anonymizer flags under `traits`
 *   (`is_anonymous`, `is_anonymous_vpn`, `is_hosting_provider`, `is_public_proxy`,
 *   `is_residential_proxy`, `is_tor_exit_node`), and `country.iso_code` (else
 *   `registered_country.iso_code`).
 * - GeoIP2-ISP: `isp`, `organization`, `autonomous_system_number` / `_organization`,
 *   `mobile_country_code` / `mobile_network_code`.
 * - GeoIP2-Domain: `domain` (MaxMind: "the second level domain associated with the IP address").
 * - GeoIP2-Connection-Type: `connection_type` (Dialup, Cable/DSL, Corporate, Cellular, Satellite).
 * - GeoIP2-Anonymous-IP: the anonymizer flags, at the top level.
 * - GeoLite2-ASN: `autonomous_system_number`, `autonomous_system_organization`.
 * - IPinfo Lite: `asn` ("AS13335"), `as_name`, `as_domain`, `country_code`.
 *
 * Records come from files the operator chose, so every field is read defensively: a wrong type is an
 * absent field, never a failure.
 */
import { getDomain } from 'tldts';
import { normaliseCompanyDomain, normaliseCountryCode, readObject, readString } from '../providers/normalise.ts';
import type { OperatorDatabaseKind } from './detect-database-kind.ts';

/** A flag of MaxMind's anonymizer data, named as the reason says it. */
export type AnonymizerFlag = 'VPN' | 'Tor exit node' | 'public proxy' | 'residential proxy' | 'hosting provider' | 'anonymous';

const ANONYMIZER_FIELDS: ReadonlyArray<readonly [string, AnonymizerFlag]> = [
  ['is_anonymous_vpn', 'VPN'],
  ['is_tor_exit_node', 'Tor exit node'],
  ['is_public_proxy', 'public proxy'],
  ['is_residential_proxy', 'residential proxy'],
  ['is_hosting_provider', 'hosting provider'],
  ['is_anonymous', 'anonymous'],
];

export interface DatabaseFacts {
  /** The organisation the address is registered to or used by (GeoIP2 `organization`). */
  organisation: string | null;
  /** The ISP carrying the address (GeoIP2 `isp`). */
  isp: string | null;
  asn: number | null;
  /** The owner of the routing network (GeoIP2 `autonomous_system_organization`, IPinfo `as_name`). */
  asOrganisation: string | null;
  /** The registrable domain of the routing network's owner (IPinfo `as_domain`). */
  asDomain: string | null;
  /** The registrable domain MaxMind associates with the address (often its reverse-DNS domain). */
  domain: string | null;
  /** GeoIP2 `user_type`, lower case as documented. */
  userType: string | null;
  /** GeoIP2 `connection_type`, as documented ("Cable/DSL"). */
  connectionType: string | null;
  /** The mobile country code, when the address is a mobile carrier's. */
  mobileCountryCode: string | null;
  anonymizer: AnonymizerFlag[];
  country: string | null;
}

export const NO_FACTS: DatabaseFacts = Object.freeze({
  organisation: null,
  isp: null,
  asn: null,
  asOrganisation: null,
  asDomain: null,
  domain: null,
  userType: null,
  connectionType: null,
  mobileCountryCode: null,
  anonymizer: [],
  country: null,
});

/** The facts in one record of a database of `kind`; an absent or malformed record has none. */
export function readDatabaseRecord(kind: OperatorDatabaseKind, raw: unknown): DatabaseFacts {
  const record = readObject(raw);
  if (!record) return NO_FACTS;
  if (kind === 'ipinfo-lite') {
    return {
      ...NO_FACTS,
      asn: asNumber(record.asn),
      asOrganisation: readString(record.as_name),
      asDomain: registrableDomain(record.as_domain),
      country: normaliseCountryCode(record.country_code),
    };
  }
  // Enterprise nests the network fields under `traits`; the single-purpose files keep them at the top.
  const fields = kind === 'geoip2-enterprise' ? (readObject(record.traits) ?? {}) : record;
  const country =
    kind === 'geoip2-enterprise'
      ? (normaliseCountryCode(readObject(record.country)?.iso_code) ?? normaliseCountryCode(readObject(record.registered_country)?.iso_code))
      : null;
  return {
    organisation: readString(fields.organization),
    isp: readString(fields.isp),
    asn: asNumber(fields.autonomous_system_number),
    asOrganisation: readString(fields.autonomous_system_organization),
    asDomain: null,
    domain: registrableDomain(fields.domain),
    userType: readString(fields.user_type)?.toLowerCase() ?? null,
    connectionType: readString(fields.connection_type),
    mobileCountryCode: mobileCode(fields.mobile_country_code),
    anonymizer: ANONYMIZER_FIELDS.filter(([field]) => fields[field] === true).map(([, flag]) => flag),
    country,
  };
}

/** Whether a record said anything (MaxMind's test databases answer `{}` for every address they hold nothing for). */
export function hasFacts(f: DatabaseFacts): boolean {
  return f.anonymizer.length > 0 || Object.entries(f).some(([key, value]) => key !== 'anonymizer' && value !== null);
}

/**
 * A database's domain as the registrable domain we vote on (lower case, public-suffix aware), or null:
 * MaxMind's test data holds `shoesfin.NET` and `in-addr.arpa`, the first a domain, the second a suffix.
 */
export function registrableDomain(raw: unknown): string | null {
  const host = normaliseCompanyDomain(raw);
  return host === null ? null : getDomain(host);
}

/** An AS number from MaxMind's integer or IPinfo's "AS13335". */
function asNumber(raw: unknown): number | null {
  if (typeof raw === 'number') return Number.isInteger(raw) && raw > 0 && raw <= 0xffffffff ? raw : null;
  const m = typeof raw === 'string' ? /^(?:AS)?(\d{1,10})$/i.exec(raw.trim()) : null;
  if (!m?.[1]) return null;
  const n = Number(m[1]);
  return n > 0 && n <= 0xffffffff ? n : null;
}

/** MCC/MNC are three-digit codes MaxMind writes as strings ("310"). */
function mobileCode(raw: unknown): string | null {
  const s = readString(raw);
  return s !== null && /^\d{2,3}$/.test(s) ? s : null;
}
