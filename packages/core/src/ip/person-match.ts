/**
 * People Data Labs person matching for the individual tier: who, at the company our waterfall already
 * identified, is most likely the visitor behind an address.
 *
 * 1. IP Enrichment API (https://docs.peopledatalabs.com/docs/reference-ip-enrichment-api, response
 *    https://docs.peopledatalabs.com/docs/output-response-ip-enrichment-api):
 *    `GET https://api.peopledatalabs.com/v5/ip/enrich?ip={ip}&return_person=true&return_ip_metadata=true`
 *    with the key in the `X-Api-Key` header (metadata is documented as absent unless asked for).
 *    Documented fields used:
 *    - `data.ip.metadata.vpn` / `proxy` / `tor` / `relay` / `hosting`: an anonymising or hosting address
 *      says nothing about who is behind it → null, and no person search;
 *    - `data.company.website` (normalised) must equal the domain we were given: we never name a person
 *      at a company other than the one the waterfall identified; `data.company.display_name` (else
 *      `name`) is the company's name when the person record has none;
 *    - `data.person` is a persona, not a named person: `confidence` (`very high` | `high` | `moderate` |
 *      `low` | `very low`, https://docs.peopledatalabs.com/docs/confidence-levels) must be `very high`
 *      or `high`; `job_title_role` and the first of `job_title_levels` describe whom to look for.
 *    HTTP 404 (PDL's documented "no match", not charged) → null.
 * 2. Person Search API (https://docs.peopledatalabs.com/docs/reference-person-search-api):
 *    `POST https://api.peopledatalabs.com/v5/person/search` with an Elasticsearch query for one person
 *    (`size: 1`, PDL bills each record returned) whose `job_company_website` is the domain, whose
 *    `job_title_role` is the persona's role, whose `job_title_levels` include the persona's first level,
 *    and who has a `linkedin_url`. Documented fields mapped from the `data[0]` record: `full_name` →
 *    name, `job_title` → title, `job_company_name` → company, `linkedin_url` → linkedin_url (PDL gives
 *    `linkedin.com/in/…`; we add `https://`). A record without a name or a LinkedIn URL, or whose
 *    `job_company_website` names another company, is no match. 404 means nobody matched → null.
 *
 * Any other non-2xx answer of either call throws with its status.
 */

import { assertIpLiteral } from './providers/http.ts';
import { normaliseCompanyDomain, readObject, readString } from './providers/normalise.ts';
import { linkedinUrl, pdlClient, pdlIpRecord, pdlPersonSearch } from './providers/pdl.ts';
import type { PersonMatch, PersonMatcher } from './types.ts';

export { PEOPLE_DATA_LABS_BASE_URL as PEOPLE_DATA_LABS_PERSON_BASE_URL } from './providers/pdl.ts';

/** Persona confidences good enough to name someone; the rest of PDL's scale is no match. */
const NAMEABLE_CONFIDENCE = new Set(['very high', 'high']);

export interface PeopleDataLabsPersonMatcherOptions {
  apiKey: string;
  baseUrl?: string | undefined;
}

export function createPeopleDataLabsPersonMatcher(opts: PeopleDataLabsPersonMatcherOptions): PersonMatcher {
  const pdl = pdlClient('peopledatalabs', opts.apiKey, opts.baseUrl);
  return {
    name: pdl.name,
    async matchPerson(input, signal): Promise<PersonMatch | null> {
      assertIpLiteral(pdl.name, input.ip);
      const domain = normaliseCompanyDomain(input.domain);
      if (domain === null) return null;

      const data = await pdlIpRecord(pdl, input.ip, { return_person: 'true' }, signal);
      const company = readObject(data?.company);
      if (!company || normaliseCompanyDomain(company.website) !== domain) return null;
      const persona = readObject(data?.person);
      const confidence = readString(persona?.confidence)?.toLowerCase();
      if (confidence === undefined || !NAMEABLE_CONFIDENCE.has(confidence)) return null;
      const role = readString(persona?.job_title_role)?.toLowerCase();
      const levels = Array.isArray(persona?.job_title_levels) ? (persona.job_title_levels as unknown[]) : [];
      const level = readString(levels[0])?.toLowerCase();
      if (role === undefined || level === undefined) return null;

      const must = [
        { term: { job_company_website: domain } },
        { term: { job_title_role: role } },
        { term: { job_title_levels: level } },
        { exists: { field: 'linkedin_url' } },
      ];
      const record = readObject((await pdlPersonSearch(pdl, must, 1, signal))[0]);
      if (!record) return null;
      const fullName = readString(record.full_name);
      const linkedin = linkedinUrl(record.linkedin_url);
      if (fullName === null || linkedin === null) return null;
      // The query asked for the domain; a record that says otherwise is not someone we may name.
      if (record.job_company_website != null && normaliseCompanyDomain(record.job_company_website) !== domain) return null;
      return {
        provider: pdl.name,
        linkedin_url: linkedin,
        name: fullName,
        title: readString(record.job_title),
        company: readString(record.job_company_name) ?? readString(company.display_name) ?? readString(company.name),
      };
    },
  };
}
