import { createPeopleDataLabsPersonMatcher } from '@sightline/core/ip/person-match';
import { delay, HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { mockHttpServer, signal } from './support/mock-http.ts';
import { pdlIpRecord } from './support/pdl.ts';

/*
 * People Data Labs in the shapes its documentation shows: IP Enrichment with `return_person`
 * ({status, data: {ip: {address, metadata, location}, company, person}}, 404 when nothing matches) and
 * Person Search ({status, data[], total}, 404 when nobody matches).
 */
const KEY = 'pdl-key';
const PDL_IP = 'https://api.peopledatalabs.com/v5/ip/enrich';
const PDL_SEARCH = 'https://api.peopledatalabs.com/v5/person/search';

const IP = {
  acme: '198.51.100.10',
  v6: '2001:db8::10',
  moderate: '198.51.100.11',
  noPersona: '198.51.100.12',
  otherCompany: '198.51.100.13',
  vpn: '198.51.100.20',
  hosting: '198.51.100.30',
  nobody: '198.51.100.40',
  noLinkedin: '198.51.100.41',
  searchDown: '198.51.100.42',
  slow: '198.51.100.60',
  noData: '198.51.100.44',
  down: '198.51.100.50',
} as const;

const ACME = { confidence: 'very high', id: 'tnHcNHbCv8MKeLh92946LAkX6PKg', website: 'acme.com', name: 'acme', display_name: 'Acme' };
const CTO = { confidence: 'High', job_title_sub_role: 'software', job_title_role: 'engineering', job_title_levels: ['cxo'] };

/** PDL's answer for `ip` (support/pdl.ts): Acme and its CTO unless `opts` say otherwise. */
const ipRecord = (ip: string, opts: Parameters<typeof pdlIpRecord>[1] = {}) => pdlIpRecord(ip, { company: ACME, person: CTO, ...opts });

const notFound = (message: string) => HttpResponse.json({ status: 404, error: { type: 'not_found', message } }, { status: 404 });

interface Seen {
  method: string;
  path: string;
  query: Record<string, string>;
  apiKey: string | null;
  body?: unknown;
}
const seen: Seen[] = [];

const server = mockHttpServer(
  { clear: [seen] },
  http.get(PDL_IP, async ({ request }) => {
    const url = new URL(request.url);
    seen.push({ method: 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), apiKey: request.headers.get('x-api-key') });
    if (request.headers.get('x-api-key') !== KEY)
      return HttpResponse.json({ status: 401, error: { type: 'authentication_error', message: 'Invalid API key' } }, { status: 401 });
    const ip = url.searchParams.get('ip') ?? '';
    switch (ip) {
      case IP.acme:
      case IP.v6:
        return HttpResponse.json(ipRecord(ip));
      case IP.moderate:
        return HttpResponse.json(ipRecord(ip, { person: { ...CTO, confidence: 'moderate' } }));
      case IP.noPersona:
        return HttpResponse.json(ipRecord(ip, { person: null }));
      case IP.otherCompany:
        return HttpResponse.json(ipRecord(ip, { company: { ...ACME, website: 'globex.com', name: 'globex', display_name: 'Globex' } }));
      case IP.vpn:
        return HttpResponse.json(ipRecord(ip, { metadata: { vpn: true, service: 'nordvpn' } }));
      case IP.hosting:
        return HttpResponse.json(ipRecord(ip, { metadata: { hosting: true } }));
      case IP.nobody:
        return HttpResponse.json(ipRecord(ip, { person: { ...CTO, job_title_role: 'legal', job_title_levels: ['vp'] } }));
      case IP.noLinkedin:
        return HttpResponse.json(ipRecord(ip, { person: { ...CTO, job_title_role: 'sales', job_title_levels: ['director'] } }));
      case IP.searchDown:
        return HttpResponse.json(ipRecord(ip, { person: { ...CTO, job_title_role: 'finance', job_title_levels: ['cxo'] } }));
      case IP.slow:
        await delay(1_000);
        return HttpResponse.json(ipRecord(ip));
      case IP.down:
        return HttpResponse.json({ status: 500, error: { type: 'server_error', message: 'Something went wrong' } }, { status: 500 });
      default:
        return notFound('No records were found matching your request');
    }
  }),
  http.post(PDL_SEARCH, async ({ request }) => {
    const url = new URL(request.url);
    const body = (await request.json()) as { query: { bool: { must: Record<string, Record<string, string>>[] } } };
    seen.push({ method: 'POST', path: url.pathname, query: Object.fromEntries(url.searchParams), apiKey: request.headers.get('x-api-key'), body });
    if (request.headers.get('x-api-key') !== KEY) return HttpResponse.json({ status: 401 }, { status: 401 });
    const role = body.query.bool.must[1]?.term?.job_title_role;
    const record = {
      id: 'p1',
      full_name: 'Casey Cto',
      job_title: 'Chief Technology Officer',
      job_company_name: 'Acme',
      job_company_website: 'acme.com',
    };
    switch (role) {
      case 'engineering':
        return HttpResponse.json({ status: 200, data: [{ ...record, linkedin_url: 'linkedin.com/in/caseycto' }], scroll_token: '1$2', total: 3 });
      case 'sales':
        return HttpResponse.json({ status: 200, data: [{ ...record, linkedin_url: null }], total: 1 });
      case 'finance':
        return HttpResponse.json({ status: 503, error: { type: 'unavailable', message: 'Search is down' } }, { status: 503 });
      default:
        return notFound('No records were found matching your search');
    }
  }),
);

const pdl = createPeopleDataLabsPersonMatcher({ apiKey: KEY });
const searches = () => seen.filter((s) => s.method === 'POST');

describe('People Data Labs person matcher', () => {
  it('is named peopledatalabs', () => {
    expect(pdl.name).toBe('peopledatalabs');
  });

  it('names the person the persona points to, at the identified company', async () => {
    expect(await pdl.matchPerson({ ip: IP.acme, domain: 'acme.com' }, signal())).toEqual({
      provider: 'peopledatalabs',
      linkedin_url: 'https://linkedin.com/in/caseycto',
      name: 'Casey Cto',
      title: 'Chief Technology Officer',
      company: 'Acme',
    });
    expect(seen).toEqual([
      {
        method: 'GET',
        path: '/v5/ip/enrich',
        query: { ip: IP.acme, return_person: 'true', return_ip_metadata: 'true' },
        apiKey: KEY,
      },
      {
        method: 'POST',
        path: '/v5/person/search',
        query: {},
        apiKey: KEY,
        body: {
          query: {
            bool: {
              must: [
                { term: { job_company_website: 'acme.com' } },
                { term: { job_title_role: 'engineering' } },
                { term: { job_title_levels: 'cxo' } },
                { exists: { field: 'linkedin_url' } },
              ],
            },
          },
          size: 1,
          titlecase: true,
        },
      },
    ]);
  });

  it('compares the given domain in its normal form, and takes IPv6', async () => {
    expect((await pdl.matchPerson({ ip: IP.v6, domain: 'https://www.ACME.com/' }, signal()))?.name).toBe('Casey Cto');
    expect(searches()[0]?.body).toMatchObject({
      query: { bool: { must: expect.arrayContaining([{ term: { job_company_website: 'acme.com' } }]) } },
    });
  });

  it('a persona below high confidence, or none, is no match and costs no search', async () => {
    expect(await pdl.matchPerson({ ip: IP.moderate, domain: 'acme.com' }, signal())).toBeNull();
    expect(await pdl.matchPerson({ ip: IP.noPersona, domain: 'acme.com' }, signal())).toBeNull();
    expect(seen.map((s) => s.method)).toEqual(['GET', 'GET']);
  });

  it('never names a person at another company than the identified one', async () => {
    expect(await pdl.matchPerson({ ip: IP.otherCompany, domain: 'acme.com' }, signal())).toBeNull();
    expect(searches()).toEqual([]);
  });

  it('a domain that is not one makes no call at all', async () => {
    expect(await pdl.matchPerson({ ip: IP.acme, domain: 'not a domain' }, signal())).toBeNull();
    expect(seen).toEqual([]);
  });

  it('a VPN or hosting address is no match and costs no search', async () => {
    expect(await pdl.matchPerson({ ip: IP.vpn, domain: 'acme.com' }, signal())).toBeNull();
    expect(await pdl.matchPerson({ ip: IP.hosting, domain: 'acme.com' }, signal())).toBeNull();
    expect(searches()).toEqual([]);
  });

  it('404 from either call is no match', async () => {
    expect(await pdl.matchPerson({ ip: IP.noData, domain: 'acme.com' }, signal())).toBeNull();
    expect(searches()).toEqual([]);
    expect(await pdl.matchPerson({ ip: IP.nobody, domain: 'acme.com' }, signal())).toBeNull();
    expect(searches()).toHaveLength(1);
  });

  it('a record without a LinkedIn URL is no match', async () => {
    expect(await pdl.matchPerson({ ip: IP.noLinkedin, domain: 'acme.com' }, signal())).toBeNull();
    expect(searches()).toHaveLength(1);
  });

  it('a record that works elsewhere is no match, whatever the query asked', async () => {
    server.use(
      http.post(PDL_SEARCH, () =>
        HttpResponse.json({
          status: 200,
          data: [{ full_name: 'Gil Globex', linkedin_url: 'linkedin.com/in/gil', job_company_name: 'Globex', job_company_website: 'globex.com' }],
          total: 1,
        }),
      ),
    );
    expect(await pdl.matchPerson({ ip: IP.acme, domain: 'acme.com' }, signal())).toBeNull();
  });

  it('any other failure throws with its status', async () => {
    await expect(pdl.matchPerson({ ip: IP.down, domain: 'acme.com' }, signal())).rejects.toThrow(
      'peopledatalabs answered HTTP 500: Something went wrong',
    );
    await expect(pdl.matchPerson({ ip: IP.searchDown, domain: 'acme.com' }, signal())).rejects.toThrow(
      'peopledatalabs answered HTTP 503: Search is down',
    );
    await expect(createPeopleDataLabsPersonMatcher({ apiKey: 'wrong' }).matchPerson({ ip: IP.acme, domain: 'acme.com' }, signal())).rejects.toThrow(
      'peopledatalabs answered HTTP 401: Invalid API key',
    );
  });

  it('honours the signal it is given', async () => {
    await expect(pdl.matchPerson({ ip: IP.slow, domain: 'acme.com' }, AbortSignal.timeout(100))).rejects.toThrow();
    const aborted = new AbortController();
    aborted.abort();
    await expect(pdl.matchPerson({ ip: IP.acme, domain: 'acme.com' }, aborted.signal)).rejects.toThrow();
    expect(searches()).toEqual([]);
  });

  it('refuses to put anything but an IP address in the URL', async () => {
    await expect(pdl.matchPerson({ ip: '../me', domain: 'acme.com' }, signal())).rejects.toThrow('peopledatalabs: "../me" is not an IP address');
    expect(seen).toEqual([]);
  });

  it('baseUrl redirects both calls (a proxy)', async () => {
    const proxied = createPeopleDataLabsPersonMatcher({ apiKey: KEY, baseUrl: 'https://pdl-proxy.example.com/pdl/' });
    server.use(
      http.get('https://pdl-proxy.example.com/pdl/v5/ip/enrich', ({ request }) => {
        seen.push({ method: 'GET', path: new URL(request.url).pathname, query: {}, apiKey: request.headers.get('x-api-key') });
        return HttpResponse.json(ipRecord(IP.acme));
      }),
      http.post('https://pdl-proxy.example.com/pdl/v5/person/search', ({ request }) => {
        seen.push({ method: 'POST', path: new URL(request.url).pathname, query: {}, apiKey: request.headers.get('x-api-key') });
        return HttpResponse.json({ status: 200, data: [{ full_name: 'Casey Cto', linkedin_url: 'linkedin.com/in/caseycto' }], total: 1 });
      }),
    );
    expect(await proxied.matchPerson({ ip: IP.acme, domain: 'acme.com' }, signal())).toEqual({
      provider: 'peopledatalabs',
      linkedin_url: 'https://linkedin.com/in/caseycto',
      name: 'Casey Cto',
      title: null,
      company: 'Acme',
    });
    expect(seen.map((s) => s.path)).toEqual(['/pdl/v5/ip/enrich', '/pdl/v5/person/search']);
  });
});
