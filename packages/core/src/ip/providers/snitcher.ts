/**
 * Snitcher IP-to-Company adapter (https://docs.snitcher.com/powered-by-snitcher/ip2company/quickstart).
 * Request: `POST https://api.snitcher.com/company/find?ip={ip}` with `Authorization: Bearer <key>` and
 * `Accept: application/json`.
 *
 * Documented response fields we map (HTTP 200 "Identified Company Response"):
 * - `domain` (falling back to `company.domain`, then `company.website`) → domain;
 *   `company.name` → company_name; `type` (`business`, …) → traffic_type.
 * - `fuzzy` → confidence: an exact match (`fuzzy: false`) is 0.9, a fuzzy one 0.6. Snitcher gives no
 *   number; this is our reading of the flag, and consensus weights can correct it.
 * - `geoIP.country_code` → country_code when present (seen in integrations, not in the excerpt of the
 *   docs we had; absent means null).
 * Documented non-200 answers: 202 "Queued for enrichment" → null (no answer within this lookup's time
 * budget); 404 → null; 403 (quota) and 429 (rate limit) throw with their status like any other error.
 */
import type { IpProvider, ProviderAnswer } from '../types.ts';
import { assertIpLiteral, endpoint, fetchProviderJson, type ProviderOptions } from './http.ts';
import { normaliseCompanyDomain, normaliseCountryCode, readObject, readString, trafficTypeFromLabel } from './normalise.ts';

export const SNITCHER_BASE_URL = 'https://api.snitcher.com';

const EXACT_MATCH_CONFIDENCE = 0.9;
const FUZZY_MATCH_CONFIDENCE = 0.6;

export function createSnitcherProvider(opts: ProviderOptions): IpProvider {
  const name = 'snitcher';
  const base = opts.baseUrl ?? SNITCHER_BASE_URL;
  return {
    name,
    async lookup(ip, signal) {
      assertIpLiteral(name, ip);
      const url = endpoint(base, '/company/find');
      url.searchParams.set('ip', ip);
      const res = await fetchProviderJson(name, url, {
        method: 'POST',
        headers: { Accept: 'application/json', Authorization: `Bearer ${opts.apiKey}` },
        signal,
      });
      if (res === null || res.status === 202) return null;
      return mapSnitcher(name, res.body);
    },
  };
}

function mapSnitcher(provider: string, raw: unknown): ProviderAnswer | null {
  const body = readObject(raw);
  if (!body) return null;
  const company = readObject(body.company);
  const domain = normaliseCompanyDomain(body.domain) ?? normaliseCompanyDomain(company?.domain) ?? normaliseCompanyDomain(company?.website);
  const companyName = readString(company?.name);
  const trafficType = trafficTypeFromLabel(body.type);
  if (domain === null && companyName === null && trafficType === null) return null;
  const fuzzy = body.fuzzy;
  return {
    provider,
    domain,
    company_name: companyName,
    traffic_type: trafficType,
    confidence: domain === null || typeof fuzzy !== 'boolean' ? null : fuzzy ? FUZZY_MATCH_CONFIDENCE : EXACT_MATCH_CONFIDENCE,
    country_code: normaliseCountryCode(readObject(body.geoIP)?.country_code),
  };
}
