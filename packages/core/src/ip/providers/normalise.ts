import type { TrafficType } from '../types.ts';

/**
 * The small vocabulary every paid-provider adapter maps into: a bare company domain, an ISO country
 * code and our TrafficType. Kept in one place so three providers and consensus agree on what "the same
 * domain" means.
 */

// The same label and TLD rule as tracker domains (tracker-domain.ts), so a provider's domain and a
// customer's tracker domain compare on equal terms.
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const TLD = /^([a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * A provider's company domain or website reduced to the bare host we vote on: lower case, without
 * scheme, credentials, port, path, query, fragment, trailing dot or a leading `www.`; international
 * names become punycode (the URL parser does it, in Node and Deno alike). Anything that is not a
 * plausible `host.tld` (empty, an IP literal, one label, a bad TLD) is null: a provider that cannot name
 * a domain has not named one.
 */
export function normaliseCompanyDomain(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const value = raw.trim();
  if (!value || /\s/.test(value)) return null;
  const withScheme = SCHEME.test(value) ? value : `http://${value.replace(/^\/\//, '')}`;
  let host: string;
  try {
    host = new URL(withScheme).hostname.toLowerCase();
  } catch {
    return null;
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host.startsWith('www.') && host.split('.').length > 2) host = host.slice(4);
  if (!host || host.length > 253) return null;
  const labels = host.split('.');
  const tld = labels[labels.length - 1] ?? '';
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || !TLD.test(tld)) return null;
  return host;
}

/** Two-letter ISO 3166-1 code in upper case, or null. */
export function normaliseCountryCode(raw: unknown): string | null {
  const s = readString(raw);
  return s !== null && /^[a-z]{2}$/i.test(s) ? s.toUpperCase() : null;
}

/**
 * A provider's organisation type label → our TrafficType. The labels are the documented ones of the
 * providers we call (IPinfo: isp/business/education/hosting; ipapi.is adds government and banking;
 * Snitcher uses the same words). A bank is a business to us. Unknown labels are null, not a guess.
 */
export function trafficTypeFromLabel(raw: unknown): TrafficType | null {
  const label = readString(raw)?.toLowerCase() ?? null;
  switch (label) {
    case 'business':
    case 'banking':
    case 'company':
      return 'business';
    case 'isp':
      return 'isp';
    case 'hosting':
    case 'datacenter':
      return 'hosting';
    case 'education':
      return 'education';
    case 'government':
      return 'government';
    default:
      return null;
  }
}

export type JsonObject = Record<string, unknown>;

/** A JSON object (not an array, not null), or null. */
export function readObject(v: unknown): JsonObject | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : null;
}

/** A non-blank string, trimmed, or null. */
export function readString(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const t = v.trim();
  return t === '' ? null : t;
}

/** Only a literal JSON `true` counts: providers send `false`, `null` or nothing otherwise. */
export function isTrue(v: unknown): boolean {
  return v === true;
}

/**
 * Who owns the address, from a provider's `company` object when it has one, else from its `asn`
 * object (whose domain and name count only for a business network). `asnNameField` is the provider's
 * name for the AS owner (`name` at IPinfo, `org` at ipapi.is).
 */
export function ownerOf(
  company: JsonObject | null,
  asn: JsonObject | null,
  asnNameField: string,
): { domain: string | null; companyName: string | null; owner: TrafficType | null } {
  if (company) {
    return {
      domain: normaliseCompanyDomain(company.domain),
      companyName: readString(company.name),
      owner: trafficTypeFromLabel(company.type),
    };
  }
  if (asn) {
    const owner = trafficTypeFromLabel(asn.type);
    if (owner === 'business') return { domain: normaliseCompanyDomain(asn.domain), companyName: readString(asn[asnNameField]), owner };
    return { domain: null, companyName: null, owner };
  }
  return { domain: null, companyName: null, owner: null };
}
