/**
 * People Data Labs enrichment for ip-to-best-fit: the company behind an unresolved IP, then the
 * decision makers who work there.
 *
 * 1. IP Enrichment API (https://docs.peopledatalabs.com/docs/reference-ip-enrichment-api):
 *    `GET https://api.peopledatalabs.com/v5/ip/enrich?ip={ip}&return_ip_metadata=true&titlecase=true`
 *    with the key in the `X-Api-Key` header. Documented fields mapped:
 *    - `data.company.website` → domain (normalised); `data.company.display_name` (else `name`) →
 *      company_name;
 *    - `data.company.confidence` (`very high` | `high` | `moderate` | `low` | `very low`) → confidence
 *      0.95 / 0.85 / 0.65 / 0.4 / 0.2;
 *    - `data.ip.metadata.vpn` / `proxy` / `tor` / `relay` / `hosting`: an anonymising or hosting address
 *      says nothing about who is behind it, so the answer is null and no people are looked up.
 *    HTTP 404 (PDL's documented "no match", not charged) → null.
 * 2. Person Search API (https://docs.peopledatalabs.com/docs/reference-person-search-api):
 *    `POST https://api.peopledatalabs.com/v5/person/search` with an Elasticsearch query for people whose
 *    `job_company_website` is the domain and whose `job_title_levels` include owner, cxo, partner, vp or
 *    director; `size` caps the credits spent (PDL charges per record returned). Documented fields
 *    mapped from each `data[]` record: `full_name` → name, `job_title` → title, `linkedin_url` →
 *    linkedin_url (PDL gives `linkedin.com/in/…`; we add `https://`). 404 means nobody matched → no
 *    people. Decision makers are ordered by seniority (owner/cxo, partner, vp, director).
 *
 * `website` and `description` of the request describe the caller's own business, not the visitor, so
 * PDL's lookups do not use them. Any other non-2xx answer of either call throws with its status.
 */

import { assertIpLiteral } from './providers/http.ts';
import { normaliseCompanyDomain, readObject, readString } from './providers/normalise.ts';
import { linkedinUrl, type PdlClient, pdlClient, pdlIpRecord, pdlPersonSearch } from './providers/pdl.ts';
import type { EnrichmentAnswer, EnrichmentPerson, EnrichmentProvider } from './types.ts';

export { PEOPLE_DATA_LABS_BASE_URL } from './providers/pdl.ts';

const CONFIDENCE: Record<string, number> = {
  'very high': 0.95,
  high: 0.85,
  moderate: 0.65,
  low: 0.4,
  'very low': 0.2,
};

const DECISION_LEVELS = ['owner', 'cxo', 'partner', 'vp', 'director'] as const;
const SENIORITY: Record<string, number> = { owner: 0, cxo: 0, partner: 1, vp: 2, director: 3 };

export interface PeopleDataLabsOptions {
  apiKey: string;
  baseUrl?: string | undefined;
  /** Most decision makers to fetch (1–100; PDL bills each record). Default 5. */
  maxPeople?: number | undefined;
}

export function createPeopleDataLabsEnrichment(opts: PeopleDataLabsOptions): EnrichmentProvider {
  const pdl = pdlClient('peopledatalabs', opts.apiKey, opts.baseUrl);
  const maxPeople = Math.min(100, Math.max(1, Math.floor(opts.maxPeople ?? 5)));

  return {
    name: pdl.name,
    async enrich(input, signal): Promise<EnrichmentAnswer | null> {
      assertIpLiteral(pdl.name, input.ip);
      const data = await pdlIpRecord(pdl, input.ip, { titlecase: 'true' }, signal);
      const company = readObject(data?.company);
      if (!company) return null;
      const domain = normaliseCompanyDomain(company.website);
      const companyName = readString(company.display_name) ?? readString(company.name);
      if (domain === null && companyName === null) return null;
      const label = readString(company.confidence)?.toLowerCase();
      const confidence = label !== undefined && Object.hasOwn(CONFIDENCE, label) ? (CONFIDENCE[label] ?? null) : null;

      const people = domain === null ? [] : await decisionMakers(pdl, domain, maxPeople, signal);
      return { provider: pdl.name, domain, company_name: companyName, confidence, people };
    },
  };
}

async function decisionMakers(pdl: PdlClient, domain: string, size: number, signal: AbortSignal): Promise<EnrichmentPerson[]> {
  const records = await pdlPersonSearch(
    pdl,
    [{ term: { job_company_website: domain } }, { terms: { job_title_levels: DECISION_LEVELS } }],
    size,
    signal,
  );
  const ranked: { person: EnrichmentPerson; rank: number }[] = [];
  for (const raw of records) {
    const record = readObject(raw);
    const fullName = readString(record?.full_name);
    if (!record || fullName === null) continue;
    const levels = Array.isArray(record.job_title_levels) ? (record.job_title_levels as unknown[]) : [];
    const rank = Math.min(99, ...levels.map((l) => (typeof l === 'string' && Object.hasOwn(SENIORITY, l) ? (SENIORITY[l] ?? 99) : 99)));
    ranked.push({
      person: { name: fullName, title: readString(record.job_title), linkedin_url: linkedinUrl(record.linkedin_url) },
      rank,
    });
  }
  // Array.prototype.sort is stable: equal seniority keeps PDL's own order.
  return ranked.sort((a, b) => a.rank - b.rank).map((r) => r.person);
}
