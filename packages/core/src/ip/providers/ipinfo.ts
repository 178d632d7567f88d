/**
 * IPinfo adapter (https://ipinfo.io/developers). Request: `GET https://ipinfo.io/{ip}` with the token as
 * `Authorization: Bearer <token>` (IPinfo accepts the header or `?token=`; the header keeps the key out
 * of URLs and logs).
 *
 * Documented response fields we map:
 * - `company.domain` → domain; `company.name` → company_name;
 *   `company.type` (`isp` | `business` | `education` | `hosting`) → traffic_type.
 * - `privacy.vpn` / `privacy.proxy` / `privacy.tor` / `privacy.relay` → `vpn`; `privacy.hosting` →
 *   `hosting`. These win over `company.type`: they describe who uses the address now, not who owns it.
 * - `asn.type` / `asn.domain` / `asn.name` only when there is no `company` object (plans without the
 *   IP-to-Company data): the type always, the domain and name only when the AS owner is a business
 *   (an ISP's or host's AS domain is not the visitor's company).
 * - `country` (ISO alpha-2) → country_code.
 * - `bogon: true` (private or reserved address) and HTTP 404 → null (nothing to identify).
 * IPinfo gives no confidence, so confidence is null.
 */
import type { IpProvider, ProviderAnswer, TrafficType } from '../types.ts';
import { assertIpLiteral, endpoint, fetchProviderJson, type ProviderOptions } from './http.ts';
import { isTrue, normaliseCountryCode, ownerOf, readObject } from './normalise.ts';

export const IPINFO_BASE_URL = 'https://ipinfo.io';

export function createIpinfoProvider(opts: ProviderOptions): IpProvider {
  const name = 'ipinfo';
  const base = opts.baseUrl ?? IPINFO_BASE_URL;
  return {
    name,
    async lookup(ip, signal) {
      assertIpLiteral(name, ip);
      const res = await fetchProviderJson(name, endpoint(base, `/${ip}`), {
        method: 'GET',
        headers: { Accept: 'application/json', Authorization: `Bearer ${opts.apiKey}` },
        signal,
      });
      return res === null ? null : mapIpinfo(name, res.body);
    },
  };
}

function mapIpinfo(provider: string, raw: unknown): ProviderAnswer | null {
  const body = readObject(raw);
  if (!body || isTrue(body.bogon)) return null;
  const company = readObject(body.company);
  const privacy = readObject(body.privacy);
  const asn = readObject(body.asn);

  const { domain, companyName, owner } = ownerOf(company, asn, 'name');

  let trafficType: TrafficType | null = owner;
  if (privacy && ['vpn', 'proxy', 'tor', 'relay'].some((flag) => isTrue(privacy[flag]))) trafficType = 'vpn';
  else if (privacy && isTrue(privacy.hosting)) trafficType = 'hosting';

  if (domain === null && companyName === null && trafficType === null) return null;
  return {
    provider,
    domain,
    company_name: companyName,
    traffic_type: trafficType,
    confidence: null,
    country_code: normaliseCountryCode(body.country),
  };
}
