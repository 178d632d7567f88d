/**
 * Profile research through People Data Labs' Person Enrichment API
 * (https://docs.peopledatalabs.com/docs/reference-person-enrichment-api, response
 * https://docs.peopledatalabs.com/docs/output-response-person-enrichment-api):
 * `GET https://api.peopledatalabs.com/v5/person/enrich?profile={url}&titlecase=true&min_likelihood=6`
 * with the key in the `X-Api-Key` header. `titlecase` because PDL answers in lower case otherwise;
 * `min_likelihood` because below it the record is more likely someone else than the person asked
 * about, and a message must not be written from a stranger's facts (PDL answers 404 instead, which is
 * not charged).
 *
 * A 200 answers `{status: 200, likelihood, data}`; documented fields of `data` mapped:
 * - `full_name` → full_name; `headline` → headline; `job_title` → job_title;
 *   `job_company_name` → company; `industry` → industry; `location_name` → location;
 *   `summary` → summary; `skills[]` → skills (at most 30);
 * - `experience[]`: `title.name` → title, `company.name` → company, `start_date` / `end_date`
 *   (`YYYY`, `YYYY-MM` or `YYYY-MM-DD`; `end_date` null for a current role) → start / end; current
 *   roles first (`is_primary` first among them), then the latest start; at most 10.
 * Fields PDL's plan does not include come back as `true` or null; either reads as unknown.
 * `linkedin_url` of the answer is not used: the profile keeps the URL the caller gave.
 *
 * HTTP 404 is PDL's documented "no match" → null. Any other non-2xx throws with its status
 * (ProviderHttpError), and a 200 without `data` throws: both are provider failures, not "unknown".
 */

import type { ProspectProfile } from '../ai/engine.ts';
import { endpoint, fetchProviderJson, ProviderHttpError } from '../ip/providers/http.ts';
import { readObject, readString } from '../ip/providers/normalise.ts';
import { pdlClient } from '../ip/providers/pdl.ts';
import type { ProfileResearch } from './profile.ts';

export { PEOPLE_DATA_LABS_BASE_URL as PEOPLE_DATA_LABS_RESEARCH_BASE_URL } from '../ip/providers/pdl.ts';

/** PDL's likelihood runs 1–10 and is logarithmic; 6 keeps the confident matches. */
const MIN_LIKELIHOOD = 6;
const MAX_EXPERIENCE = 10;
const MAX_SKILLS = 30;

export interface PeopleDataLabsResearchOptions {
  apiKey: string;
  baseUrl?: string | undefined;
}

export function createPeopleDataLabsResearch(opts: PeopleDataLabsResearchOptions): ProfileResearch {
  const pdl = pdlClient('people-data-labs', opts.apiKey, opts.baseUrl);
  return {
    name: pdl.name,
    async lookup(linkedinUrl, signal): Promise<ProspectProfile | null> {
      const url = endpoint(pdl.base, '/v5/person/enrich');
      url.searchParams.set('profile', linkedinUrl);
      url.searchParams.set('titlecase', 'true');
      url.searchParams.set('min_likelihood', String(MIN_LIKELIHOOD));
      let res: Awaited<ReturnType<typeof fetchProviderJson>>;
      try {
        res = await fetchProviderJson(pdl.name, url, { method: 'GET', headers: pdl.headers, signal });
      } catch (err) {
        throw withoutKey(err, opts.apiKey);
      }
      if (res === null) return null;
      const data = readObject(readObject(res.body)?.data);
      if (!data) throw new Error(`${pdl.name} answered HTTP ${res.status} without data`);
      return {
        linkedin_url: linkedinUrl,
        full_name: readString(data.full_name),
        headline: readString(data.headline),
        job_title: readString(data.job_title),
        company: readString(data.job_company_name),
        industry: readString(data.industry),
        location: readString(data.location_name),
        summary: readString(data.summary),
        experience: experienceOf(data.experience),
        skills: (Array.isArray(data.skills) ? data.skills : [])
          .map(readString)
          .filter((s): s is string => s !== null)
          .slice(0, MAX_SKILLS),
        source: pdl.name,
      };
    },
  };
}

type Job = ProspectProfile['experience'][number] & { primary: boolean };

function experienceOf(raw: unknown): ProspectProfile['experience'] {
  const jobs: Job[] = [];
  for (const item of Array.isArray(raw) ? raw : []) {
    const entry = readObject(item);
    if (!entry) continue;
    const job: Job = {
      title: readString(readObject(entry.title)?.name),
      company: readString(readObject(entry.company)?.name),
      start: readString(entry.start_date),
      end: readString(entry.end_date),
      primary: entry.is_primary === true,
    };
    if (job.title !== null || job.company !== null) jobs.push(job);
  }
  // PDL documents no order; dates in its ISO-like forms compare as strings.
  jobs.sort(
    (a, b) =>
      Number(a.end !== null) - Number(b.end !== null) ||
      Number(b.primary) - Number(a.primary) ||
      (b.start ?? '').localeCompare(a.start ?? '') ||
      (b.end ?? '').localeCompare(a.end ?? ''),
  );
  return jobs.slice(0, MAX_EXPERIENCE).map(({ primary: _primary, ...job }) => job);
}

// PDL's error text is short and names no key, but a key must never reach a log or a response even
// if a proxy or a future PDL message echoes it.
// A new error rather than an edited message: the stack was written with the original one.
function withoutKey(err: unknown, apiKey: string): unknown {
  if (!(err instanceof Error) || !err.message.includes(apiKey)) return err;
  const message = err.message.split(apiKey).join('[redacted]');
  if (err instanceof ProviderHttpError) {
    const prefix = `${err.provider} answered HTTP ${err.status}: `;
    return new ProviderHttpError(err.provider, err.status, message.startsWith(prefix) ? message.slice(prefix.length) : null);
  }
  return new Error(message);
}
