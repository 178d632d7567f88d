/**
 * What People Data Labs' two adapters (enrichment.ts for ip-to-best-fit, person-match.ts for the
 * tracker's individuals) share: the IP Enrichment call with its anonymising-address rule, the Person
 * Search call, and LinkedIn URLs as PDL spells them. The documented fields each adapter reads are
 * listed in its own header.
 */

import { endpoint, fetchProviderJson } from './http.ts';
import { isTrue, readObject, readString } from './normalise.ts';

export const PEOPLE_DATA_LABS_BASE_URL = 'https://api.peopledatalabs.com';

/** `data.ip.metadata` flags of an address that says nothing about who is behind it. */
const ANONYMISING_FLAGS = ['vpn', 'proxy', 'tor', 'relay', 'hosting'] as const;

export interface PdlClient {
  name: string;
  base: string;
  headers: Record<string, string>;
}

export const pdlClient = (name: string, apiKey: string, baseUrl: string | undefined): PdlClient => ({
  name,
  base: baseUrl ?? PEOPLE_DATA_LABS_BASE_URL,
  headers: { Accept: 'application/json', 'X-Api-Key': apiKey },
});

/**
 * `GET /v5/ip/enrich` with `return_ip_metadata=true` and `params`: the record's `data`, or null for
 * PDL's 404 (no match, not charged) and for an anonymising or hosting address.
 */
export async function pdlIpRecord(
  pdl: PdlClient,
  ip: string,
  params: Record<string, string>,
  signal: AbortSignal,
): Promise<Record<string, unknown> | null> {
  const url = endpoint(pdl.base, '/v5/ip/enrich');
  url.searchParams.set('ip', ip);
  url.searchParams.set('return_ip_metadata', 'true');
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const res = await fetchProviderJson(pdl.name, url, { method: 'GET', headers: pdl.headers, signal });
  if (res === null) return null;
  const data = readObject(readObject(res.body)?.data);
  const metadata = readObject(readObject(data?.ip)?.metadata);
  if (metadata && ANONYMISING_FLAGS.some((flag) => isTrue(metadata[flag]))) return null;
  return data ?? null;
}

/** `POST /v5/person/search` for `must` (title-cased), at most `size` records (PDL bills each): `data[]`, [] for its 404. */
export async function pdlPersonSearch(pdl: PdlClient, must: unknown[], size: number, signal: AbortSignal): Promise<unknown[]> {
  const res = await fetchProviderJson(pdl.name, endpoint(pdl.base, '/v5/person/search'), {
    method: 'POST',
    headers: { ...pdl.headers, 'Content-Type': 'application/json' },
    body: JSON.stringify({ query: { bool: { must } }, size, titlecase: true }),
    signal,
  });
  const records = res === null ? null : readObject(res.body)?.data;
  return Array.isArray(records) ? records : [];
}

/** A LinkedIn URL as PDL gives it (`linkedin.com/in/…`, no scheme) made absolute; null if it is not LinkedIn's. */
export function linkedinUrl(raw: unknown): string | null {
  const value = readString(raw);
  if (value === null) return null;
  const url = /^https?:\/\//i.test(value) ? value : `https://${value}`;
  try {
    const parsed = new URL(url);
    return /(^|\.)linkedin\.com$/i.test(parsed.hostname) ? parsed.toString() : null;
  } catch {
    return null;
  }
}
