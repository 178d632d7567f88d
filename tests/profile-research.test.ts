import { profileResearchFor } from '@sightline/core/compose/build-deps';
import { parseEnv } from '@sightline/core/compose/config';
import { ProviderHttpError } from '@sightline/core/ip/providers/http';
import { createPeopleDataLabsResearch } from '@sightline/core/research/people-data-labs';
import { nameFromProfileUrl, urlOnlyProfile, urlOnlyResearch } from '@sightline/core/research/url-only';
import { delay, HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { mockHttpServer, signal } from './support/mock-http.ts';
import { rejection } from './support/rejection.ts';

/*
 * People Data Labs' Person Enrichment API in its documented shapes: a match is
 * `{status: 200, likelihood, data: <person record>}` (fields PDL has no value for are null; fields a
 * plan does not include come back as `true`), no match is a 404 with `{status, error: {type,
 * message}}`, a bad key a 401 in the same envelope.
 */

const ENRICH = 'https://api.peopledatalabs.com/v5/person/enrich';
const KEY = 'pdl-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0';
const JANE = 'https://www.linkedin.com/in/jane-doe-4a1b2c';

/** A PDL person record (abridged to the fields around the ones we read), titlecased as asked. */
const janeRecord = {
  id: 'qEnOZ5Oh0poWnQ1luFBfVw_0000',
  full_name: 'Jane Doe',
  first_name: 'Jane',
  last_name: 'Doe',
  sex: 'Female',
  linkedin_url: 'linkedin.com/in/jane-doe-4a1b2c',
  linkedin_username: 'jane-doe-4a1b2c',
  work_email: true,
  personal_emails: true,
  mobile_phone: true,
  industry: 'Computer Software',
  job_title: 'VP Sales',
  job_title_role: 'Sales',
  job_title_levels: ['Vp'],
  job_company_name: 'Acme',
  job_company_website: 'acme.com',
  job_company_size: '51-200',
  location_name: 'Austin, Texas, United States',
  location_country: 'United States',
  headline: 'VP Sales at Acme | Building revenue teams',
  summary: 'I build and coach sales teams that sell to mid-market companies.',
  skills: ['Sales Management', 'Saas', 'Pipeline Management', '', 42],
  experience: [
    {
      company: { name: 'Globex', size: '201-500', website: 'globex.com', industry: 'Internet' },
      start_date: '2017-01',
      end_date: '2021-03',
      title: { name: 'Head Of Outbound', role: 'Sales', levels: ['Director'] },
      is_primary: false,
    },
    {
      company: { name: 'Initech', website: 'initech.com' },
      start_date: '2012-06',
      end_date: '2016-12',
      title: { name: 'Account Executive', role: 'Sales', levels: [] },
      is_primary: false,
    },
    {
      company: { name: 'Acme', size: '51-200', website: 'acme.com', industry: 'Computer Software' },
      start_date: '2021-04',
      end_date: null,
      title: { name: 'VP Sales', role: 'Sales', levels: ['Vp'] },
      is_primary: true,
    },
    { company: null, start_date: null, end_date: null, title: null, is_primary: false },
  ],
  education: [{ school: { name: 'University Of Texas At Austin' }, degrees: ['Bachelors'], majors: ['Economics'] }],
};

const seen: URL[] = [];
mockHttpServer(
  { clear: [seen] },
  http.get(ENRICH, async ({ request }) => {
    const url = new URL(request.url);
    seen.push(url);
    if (request.headers.get('x-api-key') !== KEY) {
      // A proxy echoing the key it was given: it must not reach our error messages.
      return HttpResponse.json(
        { status: 401, error: { type: 'authentication_error', message: `Invalid API key: ${request.headers.get('x-api-key')}` } },
        { status: 401 },
      );
    }
    switch (url.searchParams.get('profile')) {
      case JANE:
        return HttpResponse.json({ status: 200, likelihood: 10, data: janeRecord });
      case 'https://www.linkedin.com/in/broken':
        return HttpResponse.json({ status: 500, error: { type: 'server_error', message: `Something went wrong (${KEY})` } }, { status: 500 });
      case 'https://www.linkedin.com/in/slow':
        await delay(1_000);
        return HttpResponse.json({ status: 200, likelihood: 10, data: janeRecord });
      case 'https://www.linkedin.com/in/empty':
        return HttpResponse.json({ status: 200, likelihood: 9 });
      default:
        return HttpResponse.json(
          { status: 404, error: { type: 'not_found', message: 'No records were found matching your request' } },
          { status: 404 },
        );
    }
  }),
);

describe('People Data Labs profile research', () => {
  const pdl = createPeopleDataLabsResearch({ apiKey: KEY });

  it('maps a match to the prospect profile, current role first', async () => {
    expect(pdl.name).toBe('people-data-labs');
    expect(await pdl.lookup(JANE, signal())).toEqual({
      linkedin_url: JANE,
      full_name: 'Jane Doe',
      headline: 'VP Sales at Acme | Building revenue teams',
      job_title: 'VP Sales',
      company: 'Acme',
      industry: 'Computer Software',
      location: 'Austin, Texas, United States',
      summary: 'I build and coach sales teams that sell to mid-market companies.',
      experience: [
        { title: 'VP Sales', company: 'Acme', start: '2021-04', end: null },
        { title: 'Head Of Outbound', company: 'Globex', start: '2017-01', end: '2021-03' },
        { title: 'Account Executive', company: 'Initech', start: '2012-06', end: '2016-12' },
      ],
      skills: ['Sales Management', 'Saas', 'Pipeline Management'],
      source: 'people-data-labs',
    });
    const [url] = seen;
    expect(url?.pathname).toBe('/v5/person/enrich');
    expect(Object.fromEntries(url?.searchParams ?? [])).toEqual({ profile: JANE, titlecase: 'true', min_likelihood: '6' });
  });

  it('no match (404) is null: nothing known, not a failure', async () => {
    expect(await pdl.lookup('https://www.linkedin.com/in/nobody-known', signal())).toBeNull();
  });

  it('a 200 without data is a provider failure', async () => {
    await expect(pdl.lookup('https://www.linkedin.com/in/empty', signal())).rejects.toThrow('people-data-labs answered HTTP 200 without data');
  });

  it('a wrong key throws 401 without repeating the key', async () => {
    const wrong = createPeopleDataLabsResearch({ apiKey: 'pdl-wrong-key-0123456789' });
    const err = await rejection(wrong.lookup(JANE, signal()), Error);
    expect(err).toBeInstanceOf(ProviderHttpError);
    expect((err as ProviderHttpError).status).toBe(401);
    expect(err.message).toContain('people-data-labs answered HTTP 401');
    expect(err.message).not.toContain('pdl-wrong-key-0123456789');
    expect(String(err.stack)).not.toContain('pdl-wrong-key-0123456789');
  });

  it('a 5xx throws with its status, without the key', async () => {
    const err = await rejection(pdl.lookup('https://www.linkedin.com/in/broken', signal()), Error);
    expect((err as ProviderHttpError).status).toBe(500);
    expect(err.message).toContain('people-data-labs answered HTTP 500: Something went wrong');
    expect(err.message).not.toContain(KEY);
  });

  it('honours the signal it is given', async () => {
    await expect(pdl.lookup('https://www.linkedin.com/in/slow', AbortSignal.timeout(50))).rejects.toThrow();
  });
});

describe('url-only research', () => {
  it('knows the URL and, when the slug spells one, a name; nothing else', async () => {
    expect(urlOnlyResearch.name).toBe('url-only');
    expect(await urlOnlyResearch.lookup(JANE, signal())).toEqual({
      linkedin_url: JANE,
      full_name: 'Jane Doe',
      headline: null,
      job_title: null,
      company: null,
      industry: null,
      location: null,
      summary: null,
      experience: [],
      skills: [],
      source: 'url-only',
    });
  });

  it.each([
    ['https://www.linkedin.com/in/jane-doe-4a1b2c', 'Jane Doe'],
    ['https://linkedin.com/in/jane-doe/', 'Jane Doe'],
    ['https://www.linkedin.com/in/mary-ann-smith-0b1234567', 'Mary Ann Smith'],
    ['https://www.linkedin.com/in/john-smith-mba', 'John Smith'],
    ['https://www.linkedin.com/in/JOHN-SMITH-12', 'John Smith'],
    ['https://www.linkedin.com/in/jos%C3%A9-garc%C3%ADa-5b2a1c9', 'José García'],
    ['https://www.linkedin.com/in/liam-o%27neill', "Liam O'neill"],
    ['https://www.linkedin.com/in/jsmith', null],
    ['https://www.linkedin.com/in/x7f3k9', null],
    ['https://www.linkedin.com/in/jane-2-doe', null],
    ['https://www.linkedin.com/company/acme', null],
    ['not a url', null],
  ])('%s reads as %s', (url, name) => {
    expect(nameFromProfileUrl(url)).toBe(name);
    if (url.startsWith('https://')) expect(urlOnlyProfile(url).full_name).toBe(name);
  });
});

describe('research provider choice', () => {
  it('is url-only unless People Data Labs is asked for, which needs its key', () => {
    expect(profileResearchFor(parseEnv({})).name).toBe('url-only');
    expect(profileResearchFor(parseEnv({ PDL_API_KEY: KEY })).name).toBe('url-only');
    expect(profileResearchFor(parseEnv({ RESEARCH_PROVIDER: 'people-data-labs', PDL_API_KEY: KEY })).name).toBe('people-data-labs');
    expect(() => parseEnv({ RESEARCH_PROVIDER: 'people-data-labs' })).toThrow(/PDL_API_KEY is required when RESEARCH_PROVIDER=people-data-labs/);
  });
});
