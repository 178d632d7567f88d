/**
 * ipapi.is adapter (https://ipapi.is/developers.html). Request: `GET https://api.ipapi.is/?q={ip}&key={key}`
 * (the documented endpoint takes the key in the query string).
 *
 * Documented response fields we map:
 * - `company.domain` → domain; `company.name` → company_name; `company.type` (`business` | `isp` |
 *   `hosting` | `education` | `government` | `banking`; banking counts as business) → traffic_type.
 * - `is_vpn` / `is_proxy` / `is_tor` → `vpn`; `is_datacenter` → `hosting`. These win over
 *   `company.type`: they describe the current use of the address.
 * - `asn.type` / `asn.domain` / `asn.org` only when there is no `company` object, the domain and name
 *   only when the AS owner is a business.
 * - `location.country_code` → country_code.
 * - `is_bogon: true` and HTTP 404 → null. A 2xx body carrying an `error` string (how ipapi.is reports a
 *   refused query) throws.
 * `company.abuser_score` rates abuse, not the identification, so confidence is null.
 */
import type { IpProvider, ProviderAnswer, TrafficType } from '../types.ts';
import { assertIpLiteral, endpoint, fetchProviderJson, type ProviderOptions } from './http.ts';
import { isTrue, normaliseCountryCode, ownerOf, readObject, readString } from './normalise.ts';

export const IPAPI_IS_BASE_URL = 'https://api.ipapi.is';

export function createIpapiIsProvider(opts: ProviderOptions): IpProvider {
  const name = 'ipapi_is';
  const base = opts.baseUrl ?? IPAPI_IS_BASE_URL;
  return {
    name,
    async lookup(ip, signal) {
      assertIpLiteral(name, ip);
      const url = endpoint(base, '/');
      url.searchParams.set('q', ip);
      url.searchParams.set('key', opts.apiKey);
      const res = await fetchProviderJson(name, url, { method: 'GET', headers: { Accept: 'application/json' }, signal });
      return res === null ? null : mapIpapiIs(name, res.body);
    },
  };
}

function mapIpapiIs(provider: string, raw: unknown): ProviderAnswer | null {
  const body = readObject(raw);
  if (!body) return null;
  const error = readString(body.error);
  if (error !== null) throw new Error(`${provider}: ${error.slice(0, 200)}`);
  if (isTrue(body.is_bogon)) return null;
  const company = readObject(body.company);
  const asn = readObject(body.asn);

  const { domain, companyName, owner } = ownerOf(company, asn, 'org');

  let trafficType: TrafficType | null = owner;
  if (isTrue(body.is_vpn) || isTrue(body.is_proxy) || isTrue(body.is_tor)) trafficType = 'vpn';
  else if (isTrue(body.is_datacenter)) trafficType = 'hosting';

  if (domain === null && companyName === null && trafficType === null) return null;
  return {
    provider,
    domain,
    company_name: companyName,
    traffic_type: trafficType,
    confidence: null,
    country_code: normaliseCountryCode(readObject(body.location)?.country_code),
  };
}
