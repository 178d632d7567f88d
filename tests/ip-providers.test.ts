import { consensus } from '@sightline/core/ip/consensus';
import { createPeopleDataLabsEnrichment } from '@sightline/core/ip/enrichment';
import { createIpapiIsProvider } from '@sightline/core/ip/providers/ipapi-is';
import { createIpinfoProvider } from '@sightline/core/ip/providers/ipinfo';
import { normaliseCompanyDomain } from '@sightline/core/ip/providers/normalise';
import { queryProviders } from '@sightline/core/ip/providers/run';
import { createSnitcherProvider } from '@sightline/core/ip/providers/snitcher';
import type { IpProvider, ProviderAnswer, TrafficType } from '@sightline/core/ip/types';
import { delay, HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { mockHttpServer, signal } from './support/mock-http.ts';
import { pdlIpRecord } from './support/pdl.ts';

/*
 * Third-party answers in the shapes their documentation shows: IPinfo's full response (company, asn,
 * privacy), ipapi.is (is_* flags, company, asn, location), Snitcher's IP-to-Company (ip, fuzzy,
 * domain, type, company; 202 queued; 404; 403 quota) and People Data Labs (IP Enrichment's
 * {status, data: {ip, company}}; Person Search's {status, data[], total}).
 */
const IP = {
  acme: '198.51.100.10',
  vpn: '198.51.100.20',
  hosting: '198.51.100.30',
  bank: '198.51.100.31',
  mixed: '198.51.100.40',
  noData: '198.51.100.44',
  down: '198.51.100.50',
  queued: '198.51.100.70',
  quota: '198.51.100.71',
  fuzzy: '198.51.100.72',
  asnBusiness: '198.51.100.80',
  asnIsp: '198.51.100.81',
  bogon: '10.1.2.3',
  v6: '2001:db8::10',
} as const;

const KEYS = { ipinfo: 'ipinfo-token', ipapi: 'ipapi-key', snitcher: 'snitcher-key', pdl: 'pdl-key' } as const;

const PRIVACY_CLEAN = { vpn: false, proxy: false, tor: false, relay: false, hosting: false, service: '' };

function ipinfoBody(ip: string, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    ip,
    hostname: 'host.example.net',
    city: 'Springfield',
    region: 'Massachusetts',
    country: 'US',
    loc: '42.1210,-72.4896',
    postal: '01129',
    timezone: 'America/New_York',
    asn: { asn: 'AS7922', name: 'Comcast Cable Communications, LLC', domain: 'comcast.net', route: '198.51.100.0/24', type: 'isp' },
    privacy: PRIVACY_CLEAN,
    ...extra,
  };
}

function ipapiBody(ip: string, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    ip,
    rir: 'ARIN',
    is_bogon: false,
    is_mobile: false,
    is_satellite: false,
    is_crawler: false,
    is_datacenter: false,
    is_tor: false,
    is_proxy: false,
    is_vpn: false,
    is_abuser: false,
    asn: {
      asn: 7922,
      abuser_score: '0.0005 (Low)',
      route: '198.51.100.0/24',
      org: 'Comcast Cable Communications, LLC',
      domain: 'comcast.net',
      type: 'isp',
    },
    location: { continent: 'NA', country: 'United States', country_code: 'us', city: 'Springfield' },
    elapsed_ms: 0.9,
    ...extra,
  };
}

const handlers = [
  http.get('https://ipinfo.io/:ip', async ({ params, request }) => {
    if (request.headers.get('authorization') !== `Bearer ${KEYS.ipinfo}`)
      return HttpResponse.json({ status: 403, error: { title: 'Unknown token' } }, { status: 403 });
    const ip = String(params.ip);
    switch (ip) {
      case IP.acme:
      case IP.v6:
        return HttpResponse.json(ipinfoBody(ip, { company: { name: 'Acme Incorporated', domain: 'https://www.Acme.com/about', type: 'business' } }));
      case IP.vpn:
        return HttpResponse.json(
          ipinfoBody(ip, {
            company: { name: 'Tefincom S.A.', domain: 'nordvpn.com', type: 'business' },
            privacy: { ...PRIVACY_CLEAN, vpn: true, service: 'NordVPN' },
          }),
        );
      case IP.hosting:
        return HttpResponse.json(
          ipinfoBody(ip, {
            company: { name: 'Amazon.com, Inc.', domain: 'amazon.com', type: 'hosting' },
            privacy: { ...PRIVACY_CLEAN, hosting: true },
          }),
        );
      case IP.asnBusiness:
        return HttpResponse.json({
          ip,
          country: 'DE',
          asn: { asn: 'AS3209', name: 'Initech GmbH', domain: 'initech.de', route: '198.51.100.0/24', type: 'business' },
        });
      case IP.asnIsp:
        return HttpResponse.json({
          ip,
          country: 'US',
          asn: { asn: 'AS7922', name: 'Comcast', domain: 'comcast.net', route: '198.51.100.0/24', type: 'isp' },
        });
      case IP.bogon:
        return HttpResponse.json({ ip, bogon: true });
      case IP.mixed:
        await delay(1_000);
        return HttpResponse.json(ipinfoBody(ip, { company: { name: 'Acme', domain: 'acme.com', type: 'business' } }));
      case IP.down:
        return new HttpResponse('Internal Server Error', { status: 500 });
      default:
        return HttpResponse.json({ status: 404, error: { title: 'Wrong ip', message: 'Please provide a valid IP address' } }, { status: 404 });
    }
  }),
  http.get('https://api.ipapi.is/', ({ request }) => {
    const url = new URL(request.url);
    if (url.searchParams.get('key') !== KEYS.ipapi) return HttpResponse.json({ error: 'Invalid API key' }, { status: 403 });
    const ip = url.searchParams.get('q') ?? '';
    switch (ip) {
      case IP.acme:
        return HttpResponse.json(
          ipapiBody(ip, {
            company: {
              name: 'Acme Inc',
              abuser_score: '0.0011 (Low)',
              domain: 'acme.com',
              type: 'business',
              network: '198.51.100.0 - 198.51.100.255',
            },
          }),
        );
      case IP.vpn:
        return HttpResponse.json(
          ipapiBody(ip, {
            is_vpn: true,
            is_datacenter: true,
            company: { name: 'Datacamp Limited', abuser_score: '0.0093 (Elevated)', domain: 'www.datacamp.co.uk', type: 'hosting' },
            vpn: { service: 'NordVPN', url: 'https://nordvpn.com/', type: 'vpn' },
          }),
        );
      case IP.hosting:
        return HttpResponse.json(
          ipapiBody(ip, {
            is_datacenter: true,
            company: { name: 'Amazon.com, Inc.', abuser_score: '0.0039 (Low)', domain: 'amazon.com', type: 'hosting' },
          }),
        );
      case IP.bank:
        return HttpResponse.json(
          ipapiBody(ip, { company: { name: 'Big Bank plc', abuser_score: '0 (Very Low)', domain: 'BigBank.com.', type: 'banking' } }),
        );
      case IP.bogon:
        return HttpResponse.json({ ip, is_bogon: true, elapsed_ms: 0.1 });
      case IP.noData:
        return HttpResponse.json({ ip, is_bogon: false, is_datacenter: false, is_vpn: false, is_proxy: false, is_tor: false, elapsed_ms: 0.2 });
      case IP.mixed:
      case IP.down:
        return HttpResponse.json({ error: 'upstream unavailable' }, { status: 503 });
      default:
        return HttpResponse.json({ error: 'Invalid IP Address or AS Number' }, { status: 400 });
    }
  }),
  http.post('https://api.snitcher.com/company/find', ({ request }) => {
    if (request.headers.get('authorization') !== `Bearer ${KEYS.snitcher}`)
      return HttpResponse.json({ message: 'Unauthenticated.' }, { status: 401 });
    const ip = new URL(request.url).searchParams.get('ip') ?? '';
    const found = (fuzzy: boolean) =>
      HttpResponse.json({
        ip,
        fuzzy,
        domain: 'ACME.COM.',
        type: 'business',
        company: {
          name: 'Acme',
          domain: 'acme.com',
          website: 'https://acme.com',
          industry: 'Information Technology and Services',
          founded_year: '1999',
          employee_range: '51-200 employees',
          annual_revenue: 20000000,
          total_funding: null,
          location: '1 Road Runner Way, Phoenix, United States',
        },
        geoIP: { country: 'United States', country_code: 'US', city: 'Phoenix' },
      });
    switch (ip) {
      case IP.acme:
      case IP.mixed:
        return found(false);
      case IP.fuzzy:
        return found(true);
      case IP.queued:
        return HttpResponse.json({ status: 202, message: 'Queued for enrichment. Please retry this request in a few seconds.' }, { status: 202 });
      case IP.quota:
        return HttpResponse.json(
          {
            message:
              'You have exceeded your allowed quota. Please upgrade to a plan that allows more volume or wait for your billing cycle to reset.',
          },
          { status: 403 },
        );
      case IP.down:
        return new HttpResponse(null, { status: 502 });
      default:
        return HttpResponse.json({ message: 'Company not found.' }, { status: 404 });
    }
  }),
];

const PDL_IP = 'https://api.peopledatalabs.com/v5/ip/enrich';
const PDL_SEARCH = 'https://api.peopledatalabs.com/v5/person/search';
const searches: unknown[] = [];

const pdlHandlers = [
  http.get(PDL_IP, async ({ request }) => {
    if (request.headers.get('x-api-key') !== KEYS.pdl)
      return HttpResponse.json({ status: 401, error: { type: 'authentication_error', message: 'Invalid API key' } }, { status: 401 });
    const url = new URL(request.url);
    const ip = url.searchParams.get('ip') ?? '';
    switch (ip) {
      case IP.acme:
        return HttpResponse.json(
          pdlIpRecord(ip, {
            company: {
              confidence: 'High',
              id: 'tnHcNHbCv8MKeLh92946LAkX6PKg',
              website: 'acme.com',
              name: 'acme',
              display_name: 'Acme',
              employee_count: 120,
            },
          }),
        );
      case IP.fuzzy:
        return HttpResponse.json(
          pdlIpRecord(ip, { company: { confidence: 'moderate', website: 'globex.com', name: 'globex', display_name: 'Globex' } }),
        );
      case IP.vpn:
        return HttpResponse.json(
          pdlIpRecord(ip, { metadata: { vpn: true, service: 'nordvpn' }, company: { confidence: 'low', website: 'nordvpn.com', name: 'nordvpn' } }),
        );
      case IP.mixed:
        await delay(1_000);
        return HttpResponse.json(pdlIpRecord(ip, { company: { confidence: 'high', website: 'acme.com', name: 'acme' } }));
      case IP.down:
        return HttpResponse.json({ status: 500, error: { type: 'server_error', message: 'Something went wrong' } }, { status: 500 });
      default:
        return HttpResponse.json(
          { status: 404, error: { type: 'not_found', message: 'No records were found matching your request' } },
          { status: 404 },
        );
    }
  }),
  http.post(PDL_SEARCH, async ({ request }) => {
    if (request.headers.get('x-api-key') !== KEYS.pdl) return HttpResponse.json({ status: 401 }, { status: 401 });
    const body = (await request.json()) as { query?: { bool?: { must?: { term?: { job_company_website?: string } }[] } } };
    searches.push(body);
    const website = body.query?.bool?.must?.[0]?.term?.job_company_website;
    if (website !== 'acme.com')
      return HttpResponse.json({ status: 404, error: { type: 'not_found', message: 'No records were found matching your search' } }, { status: 404 });
    return HttpResponse.json({
      status: 200,
      data: [
        {
          id: 'p1',
          full_name: 'Dana Director',
          job_title: 'Director Of Sales',
          linkedin_url: 'linkedin.com/in/danadirector',
          job_title_levels: ['director'],
          job_company_website: 'acme.com',
        },
        {
          id: 'p2',
          full_name: 'Carol Chief',
          job_title: 'Chief Executive Officer',
          linkedin_url: 'linkedin.com/in/carolchief',
          job_title_levels: ['cxo', 'owner'],
          job_company_website: 'acme.com',
        },
        { id: 'p3', full_name: 'Vic Vee', job_title: 'Vp Marketing', linkedin_url: null, job_title_levels: ['vp'], job_company_website: 'acme.com' },
        { id: 'p4', full_name: null, job_title: 'Director', linkedin_url: 'linkedin.com/in/anon', job_title_levels: ['director'] },
      ],
      scroll_token: '1117$12.34',
      total: 4,
    });
  }),
];

const server = mockHttpServer({ clear: [searches] }, ...handlers, ...pdlHandlers);

const ipinfo = createIpinfoProvider({ apiKey: KEYS.ipinfo });
const ipapi = createIpapiIsProvider({ apiKey: KEYS.ipapi });
const snitcher = createSnitcherProvider({ apiKey: KEYS.snitcher });

describe('domain normalisation', () => {
  it.each([
    ['https://www.Acme.com/about?x=1#top', 'acme.com'],
    ['HTTP://WWW.ACME.COM:8080', 'acme.com'],
    ['  Acme.COM.  ', 'acme.com'],
    ['www.acme.co.uk', 'acme.co.uk'],
    ['//cdn.acme.io/path', 'cdn.acme.io'],
    ['http://user:secret@acme.com/', 'acme.com'],
    ['münchen.de', 'xn--mnchen-3ya.de'],
    ['www.com', 'www.com'],
  ])('%s → %s', (raw, expected) => {
    expect(normaliseCompanyDomain(raw)).toBe(expected);
  });

  it.each([
    [''],
    ['   '],
    ['localhost'],
    ['192.0.2.1'],
    ['http://[2001:db8::1]/'],
    ['acme'],
    ['not a domain'],
    ['acme.c0m'],
    ['-acme.com'],
    ['acme.com:abc'],
    ['www'],
  ])('%j is not a company domain', (raw) => {
    expect(normaliseCompanyDomain(raw)).toBeNull();
  });

  it('non-strings are not domains', () => {
    expect(normaliseCompanyDomain(null)).toBeNull();
    expect(normaliseCompanyDomain(42)).toBeNull();
  });
});

describe('IPinfo adapter', () => {
  it('maps company, type and country, with the domain normalised and no confidence', async () => {
    expect(await ipinfo.lookup(IP.acme, signal())).toEqual({
      provider: 'ipinfo',
      domain: 'acme.com',
      company_name: 'Acme Incorporated',
      traffic_type: 'business',
      confidence: null,
      country_code: 'US',
    });
  });

  it('an IPv6 address goes in the path as is', async () => {
    expect((await ipinfo.lookup(IP.v6, signal()))?.domain).toBe('acme.com');
  });

  it('privacy.vpn wins over the company type', async () => {
    expect(await ipinfo.lookup(IP.vpn, signal())).toEqual({
      provider: 'ipinfo',
      domain: 'nordvpn.com',
      company_name: 'Tefincom S.A.',
      traffic_type: 'vpn',
      confidence: null,
      country_code: 'US',
    });
  });

  it('privacy.hosting is hosting traffic', async () => {
    expect((await ipinfo.lookup(IP.hosting, signal()))?.traffic_type).toBe('hosting');
  });

  it('without a company object the ASN gives the type, and its domain only for a business AS', async () => {
    expect(await ipinfo.lookup(IP.asnBusiness, signal())).toEqual({
      provider: 'ipinfo',
      domain: 'initech.de',
      company_name: 'Initech GmbH',
      traffic_type: 'business',
      confidence: null,
      country_code: 'DE',
    });
    expect(await ipinfo.lookup(IP.asnIsp, signal())).toEqual({
      provider: 'ipinfo',
      domain: null,
      company_name: null,
      traffic_type: 'isp',
      confidence: null,
      country_code: 'US',
    });
  });

  it('a bogon and a 404 are no answer', async () => {
    expect(await ipinfo.lookup(IP.bogon, signal())).toBeNull();
    expect(await ipinfo.lookup(IP.noData, signal())).toBeNull();
  });

  it('a 5xx throws with the status; a wrong token throws with the status and the provider message', async () => {
    await expect(ipinfo.lookup(IP.down, signal())).rejects.toThrow('ipinfo answered HTTP 500: Internal Server Error');
    const wrong = createIpinfoProvider({ apiKey: 'nope' });
    await expect(wrong.lookup(IP.acme, signal())).rejects.toThrow('ipinfo answered HTTP 403: Unknown token');
  });

  it('refuses to put anything but an IP address in the URL', async () => {
    await expect(ipinfo.lookup('../me', signal())).rejects.toThrow('ipinfo: "../me" is not an IP address');
  });

  it('baseUrl redirects the call (a proxy or a regional endpoint)', async () => {
    server.use(
      http.get('https://proxy.internal/ipinfo/:ip', ({ params }) =>
        HttpResponse.json({ ip: params.ip, country: 'FR', company: { name: 'Via', domain: 'via.fr', type: 'business' } }),
      ),
    );
    const viaProxy = createIpinfoProvider({ apiKey: KEYS.ipinfo, baseUrl: 'https://proxy.internal/ipinfo/' });
    expect((await viaProxy.lookup(IP.acme, signal()))?.domain).toBe('via.fr');
  });
});

describe('ipapi.is adapter', () => {
  it('maps company, type and location.country_code', async () => {
    expect(await ipapi.lookup(IP.acme, signal())).toEqual({
      provider: 'ipapi_is',
      domain: 'acme.com',
      company_name: 'Acme Inc',
      traffic_type: 'business',
      confidence: null,
      country_code: 'US',
    });
  });

  it('is_vpn wins over is_datacenter and the company type', async () => {
    expect(await ipapi.lookup(IP.vpn, signal())).toEqual({
      provider: 'ipapi_is',
      domain: 'datacamp.co.uk',
      company_name: 'Datacamp Limited',
      traffic_type: 'vpn',
      confidence: null,
      country_code: 'US',
    });
  });

  it('is_datacenter is hosting; a bank is a business', async () => {
    expect((await ipapi.lookup(IP.hosting, signal()))?.traffic_type).toBe('hosting');
    const bank = await ipapi.lookup(IP.bank, signal());
    expect([bank?.traffic_type, bank?.domain]).toEqual(['business', 'bigbank.com']);
  });

  it('a bogon or an answer without company or flags is no answer', async () => {
    expect(await ipapi.lookup(IP.bogon, signal())).toBeNull();
    expect(await ipapi.lookup(IP.noData, signal())).toBeNull();
  });

  it('errors carry the status and the provider message, never the key', async () => {
    await expect(ipapi.lookup(IP.down, signal())).rejects.toThrow('ipapi_is answered HTTP 503: upstream unavailable');
    const err = await ipapi.lookup(IP.down, signal()).catch((e: unknown) => e);
    expect(String(err)).not.toContain(KEYS.ipapi);
  });

  it('a 200 carrying an error string throws', async () => {
    server.use(http.get('https://api.ipapi.is/', () => HttpResponse.json({ error: 'Daily quota exceeded' })));
    await expect(ipapi.lookup(IP.acme, signal())).rejects.toThrow('ipapi_is: Daily quota exceeded');
  });
});

describe('Snitcher adapter', () => {
  it('maps domain, company name, type and geoIP; an exact match is 0.9', async () => {
    expect(await snitcher.lookup(IP.acme, signal())).toEqual({
      provider: 'snitcher',
      domain: 'acme.com',
      company_name: 'Acme',
      traffic_type: 'business',
      confidence: 0.9,
      country_code: 'US',
    });
  });

  it('a fuzzy match is 0.6', async () => {
    expect((await snitcher.lookup(IP.fuzzy, signal()))?.confidence).toBe(0.6);
  });

  it('202 queued and 404 are no answer', async () => {
    expect(await snitcher.lookup(IP.queued, signal())).toBeNull();
    expect(await snitcher.lookup(IP.noData, signal())).toBeNull();
  });

  it('quota and outages throw with their status', async () => {
    await expect(snitcher.lookup(IP.quota, signal())).rejects.toThrow(/^snitcher answered HTTP 403: You have exceeded your allowed quota/);
    await expect(snitcher.lookup(IP.down, signal())).rejects.toThrow('snitcher answered HTTP 502');
  });
});

describe('queryProviders', () => {
  it('a slow provider times out on its own deadline and a 5xx fails, while the third still answers', async () => {
    const started = Date.now();
    const run = await queryProviders([ipinfo, ipapi, snitcher], IP.mixed, { timeoutMs: 150 });
    expect(Date.now() - started).toBeLessThan(900);
    expect(run.answers.map((a) => [a.provider, a.domain])).toEqual([['snitcher', 'acme.com']]);
    expect(run.failures).toEqual([
      { provider: 'ipinfo', error: 'timed out after 150 ms' },
      { provider: 'ipapi_is', error: 'ipapi_is answered HTTP 503: upstream unavailable' },
    ]);
  });

  it('every provider failing is still a resolved result', async () => {
    const run = await queryProviders([ipinfo, ipapi, snitcher], IP.down, { timeoutMs: 2_000 });
    expect(run).toEqual({
      answers: [],
      failures: [
        { provider: 'ipinfo', error: 'ipinfo answered HTTP 500: Internal Server Error' },
        { provider: 'ipapi_is', error: 'ipapi_is answered HTTP 503: upstream unavailable' },
        { provider: 'snitcher', error: 'snitcher answered HTTP 502' },
      ],
    });
  });

  it('no data is neither an answer nor a failure', async () => {
    expect(await queryProviders([ipinfo, ipapi, snitcher], IP.noData, { timeoutMs: 2_000 })).toEqual({ answers: [], failures: [] });
  });

  it('a provider that ignores its signal, one that throws synchronously and one that rejects with a string are all failures', async () => {
    const deaf: IpProvider = { name: 'deaf', lookup: () => new Promise(() => {}) };
    const sync: IpProvider = {
      name: 'sync',
      lookup: () => {
        throw new Error('misconfigured');
      },
    };
    const stringly: IpProvider = { name: 'stringly', lookup: () => Promise.reject('nope') };
    const started = Date.now();
    const run = await queryProviders([deaf, sync, stringly, snitcher], IP.acme, { timeoutMs: 100 });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(run.failures).toEqual([
      { provider: 'deaf', error: 'timed out after 100 ms' },
      { provider: 'sync', error: 'misconfigured' },
      { provider: 'stringly', error: 'nope' },
    ]);
    expect(run.answers.map((a) => a.provider)).toEqual(['snitcher']);
  });

  it('each provider gets its own signal, and answers are stamped with the provider name', async () => {
    const signals: AbortSignal[] = [];
    const spy = (name: string): IpProvider => ({
      name,
      lookup: async (_ip, s) => {
        signals.push(s);
        return answer('impostor', 'acme.com');
      },
    });
    const run = await queryProviders([spy('a'), spy('b')], IP.acme, { timeoutMs: 1_000 });
    expect(new Set(signals).size).toBe(2);
    expect(run.answers.map((a) => a.provider)).toEqual(['a', 'b']);
  });

  it('a nonsensical timeout is a programming error', async () => {
    await expect(queryProviders([ipinfo], IP.acme, { timeoutMs: 0 })).rejects.toThrow(RangeError);
  });

  it('end to end: three real adapters agree on acme.com → confirmed', async () => {
    const run = await queryProviders([ipinfo, ipapi, snitcher], IP.acme, { timeoutMs: 2_000 });
    expect(run.failures).toEqual([]);
    expect(consensus(run.answers, { weights: {} })).toEqual({
      identified: true,
      domain: 'acme.com',
      company_name: 'Acme',
      confidence: 1,
      confidence_level: 'confirmed',
      traffic_type: 'business',
      reason: '3 providers agree on acme.com',
      matches: [{ domain: 'acme.com', confidence: 1 }],
    });
  });

  it('end to end: two providers flag a VPN → vpn traffic, not identified', async () => {
    const run = await queryProviders([ipinfo, ipapi, snitcher], IP.vpn, { timeoutMs: 2_000 });
    expect(consensus(run.answers, { weights: {} })).toEqual({
      identified: false,
      domain: null,
      company_name: null,
      confidence: 0.84,
      confidence_level: 'confirmed',
      traffic_type: 'vpn',
      reason: '2 providers report a VPN',
      matches: [],
    });
  });
});

function answer(
  provider: string,
  domain: string | null,
  extra: { type?: TrafficType | null; confidence?: number | null; name?: string | null } = {},
): ProviderAnswer {
  return {
    provider,
    domain,
    company_name: extra.name ?? null,
    traffic_type: extra.type === undefined ? (domain === null ? null : 'business') : extra.type,
    confidence: extra.confidence ?? null,
    country_code: null,
  };
}

describe('consensus', () => {
  const equal = { weights: {} };

  it('no answers: nothing identified, unknown traffic, confidence 0', () => {
    const none = {
      identified: false,
      domain: null,
      company_name: null,
      confidence: 0,
      confidence_level: 'unconfirmed',
      traffic_type: 'unknown',
      reason: 'no provider identified a company',
      matches: [],
    };
    expect(consensus([], equal)).toEqual(none);
    expect(consensus([answer('a', null), answer('b', 'not a domain', { type: null })], equal)).toEqual(none);
  });

  it('agreement: 3 providers on the same (differently written) domain are confirmed', () => {
    const result = consensus(
      [answer('a', 'https://www.acme.com/', { name: 'Acme Inc' }), answer('b', 'ACME.com.', { name: 'Acme' }), answer('c', 'acme.com:443')],
      equal,
    );
    expect(result).toEqual({
      identified: true,
      domain: 'acme.com',
      company_name: 'Acme Inc',
      confidence: 0.98,
      confidence_level: 'confirmed',
      traffic_type: 'business',
      reason: '3 providers agree on acme.com',
      matches: [{ domain: 'acme.com', confidence: 0.98 }],
    });
  });

  it('two agreeing providers are confirmed; one alone is only likely, however sure it says it is', () => {
    expect(consensus([answer('a', 'acme.com'), answer('b', 'acme.com')], equal)).toMatchObject({
      identified: true,
      confidence: 0.84,
      confidence_level: 'confirmed',
    });
    expect(consensus([answer('a', 'acme.com')], equal)).toMatchObject({
      identified: true,
      confidence: 0.7,
      confidence_level: 'likely',
      reason: 'one provider names acme.com',
    });
    expect(consensus([answer('a', 'acme.com', { confidence: 0.99 })], equal)).toMatchObject({
      identified: true,
      confidence: 0.75,
      confidence_level: 'likely',
    });
  });

  it('disagreement: two domains with the same weight identify nothing and both stay in matches', () => {
    expect(consensus([answer('a', 'globex.com'), answer('b', 'acme.com')], equal)).toEqual({
      identified: false,
      domain: null,
      company_name: null,
      confidence: 0,
      confidence_level: 'unconfirmed',
      traffic_type: 'business',
      reason: 'providers disagree: acme.com (1 provider), globex.com (1 provider)',
      matches: [
        { domain: 'acme.com', confidence: 0.35 },
        { domain: 'globex.com', confidence: 0.35 },
      ],
    });
    const twoAndTwo = consensus([answer('a', 'acme.com'), answer('b', 'globex.com'), answer('c', 'acme.com'), answer('d', 'globex.com')], equal);
    expect(twoAndTwo).toMatchObject({
      identified: false,
      confidence_level: 'unconfirmed',
      reason: 'providers disagree: acme.com (2 providers), globex.com (2 providers)',
    });
    expect(twoAndTwo.matches).toEqual([
      { domain: 'acme.com', confidence: 0.42 },
      { domain: 'globex.com', confidence: 0.42 },
    ]);
  });

  it('a winner that does not clear 1.5 × the runner-up is contested even when it leads', () => {
    // 0.7 × 1.4 = 0.98 vs 0.7: ratio 1.4 < 1.5.
    const result = consensus([answer('a', 'acme.com'), answer('b', 'globex.com')], { weights: { a: 1.4 } });
    expect(result).toMatchObject({ identified: false, confidence: 0.117, confidence_level: 'unconfirmed' });
    expect(result.matches).toEqual([
      { domain: 'acme.com', confidence: 0.408 },
      { domain: 'globex.com', confidence: 0.292 },
    ]);
  });

  it('dominance: two against one identifies the pair as likely', () => {
    expect(consensus([answer('a', 'acme.com', { name: 'Acme' }), answer('b', 'globex.com'), answer('c', 'acme.com')], equal)).toEqual({
      identified: true,
      domain: 'acme.com',
      company_name: 'Acme',
      confidence: 0.56,
      confidence_level: 'likely',
      traffic_type: 'business',
      reason: '2 of 3 providers name acme.com, one provider names globex.com',
      matches: [
        { domain: 'acme.com', confidence: 0.56 },
        { domain: 'globex.com', confidence: 0.233 },
      ],
    });
  });

  it('one provider reporting a VPN pulls two agreeing providers below likely', () => {
    expect(consensus([answer('a', 'acme.com'), answer('b', 'acme.com'), answer('c', 'nordvpn.com', { type: 'vpn' })], equal)).toEqual({
      identified: false,
      domain: null,
      company_name: null,
      confidence: 0.467,
      confidence_level: 'unconfirmed',
      traffic_type: 'business',
      reason: '2 of 3 providers name acme.com but one provider reports a VPN; not enough to identify the company',
      matches: [{ domain: 'acme.com', confidence: 0.467 }],
    });
  });

  it('an ISP flag costs less than a VPN flag; three agreeing providers survive a VPN flag', () => {
    expect(consensus([answer('a', 'acme.com'), answer('b', 'acme.com'), answer('c', 'comcast.net', { type: 'isp' })], equal)).toMatchObject({
      identified: true,
      confidence: 0.513,
      confidence_level: 'likely',
      reason: '2 of 3 providers name acme.com but one provider reports an ISP network',
    });
    expect(
      consensus([answer('a', 'acme.com'), answer('b', 'acme.com'), answer('c', 'acme.com'), answer('d', null, { type: 'vpn' })], equal),
    ).toMatchObject({
      identified: true,
      domain: 'acme.com',
      confidence: 0.643,
      confidence_level: 'likely',
    });
  });

  it('when VPN votes outweigh business votes the result is VPN traffic', () => {
    expect(consensus([answer('a', 'acme.com'), answer('b', null, { type: 'vpn' }), answer('c', 'nordvpn.com', { type: 'vpn' })], equal)).toEqual({
      identified: false,
      domain: null,
      company_name: null,
      confidence: 0.56,
      confidence_level: 'likely',
      traffic_type: 'vpn',
      reason: '2 providers report a VPN, outweighing one provider that names acme.com',
      matches: [{ domain: 'acme.com', confidence: 0.156 }],
    });
    expect(consensus([answer('a', null, { type: 'vpn' })], equal)).toEqual({
      identified: false,
      domain: null,
      company_name: null,
      confidence: 0.7,
      confidence_level: 'likely',
      traffic_type: 'vpn',
      reason: 'one provider reports a VPN',
      matches: [],
    });
  });

  it('non-business ties go to the more severe type; education is its own traffic type', () => {
    expect(consensus([answer('a', 'amazon.com', { type: 'hosting' }), answer('b', null, { type: 'vpn' })], equal)).toMatchObject({
      traffic_type: 'vpn',
      confidence: 0.84,
      reason: 'one provider reports a VPN and one provider reports a hosting network',
    });
    expect(consensus([answer('a', 'mit.edu', { type: 'education' })], equal)).toMatchObject({
      identified: false,
      traffic_type: 'education',
      reason: 'one provider reports an education network',
    });
  });

  it('weights change the outcome', () => {
    const answers = [answer('ipinfo', 'acme.com'), answer('snitcher', 'globex.com')];
    expect(consensus(answers, equal).identified).toBe(false);
    expect(consensus(answers, { weights: { ipinfo: 3 } })).toMatchObject({
      identified: true,
      domain: 'acme.com',
      confidence: 0.525,
      confidence_level: 'likely',
      reason: 'one of 2 providers names acme.com, one provider names globex.com',
    });
    expect(consensus(answers, { weights: { snitcher: 3 } })).toMatchObject({ identified: true, domain: 'globex.com', confidence: 0.525 });
    expect(consensus(answers, { weights: { ipinfo: 0 } })).toMatchObject({
      identified: true,
      domain: 'globex.com',
      confidence: 0.7,
      reason: 'one provider names globex.com',
    });
    expect(consensus(answers, { weights: { ipinfo: 1 }, defaultWeight: 0.2 })).toMatchObject({
      identified: true,
      domain: 'acme.com',
      confidence: 0.583,
    });
  });

  it("a provider's own confidence scales its vote", () => {
    expect(consensus([answer('a', 'acme.com', { confidence: 0.9 }), answer('b', 'acme.com', { confidence: 0.9 })], equal)).toMatchObject({
      identified: true,
      confidence: 1,
      confidence_level: 'confirmed',
    });
    expect(consensus([answer('a', 'acme.com', { confidence: 0.3 }), answer('b', 'acme.com', { confidence: 0.3 })], equal)).toMatchObject({
      identified: false,
      confidence: 0.36,
      confidence_level: 'unconfirmed',
    });
    // 0.9 against 0.3 dominates (3×), but half the providers' trust backing it is too little to identify.
    expect(consensus([answer('a', 'acme.com', { confidence: 0.9 }), answer('b', 'globex.com', { confidence: 0.3 })], equal)).toEqual({
      identified: false,
      domain: null,
      company_name: null,
      confidence: 0.45,
      confidence_level: 'unconfirmed',
      traffic_type: 'business',
      reason: 'one of 2 providers names acme.com, one provider names globex.com; not enough to identify the company',
      matches: [
        { domain: 'acme.com', confidence: 0.45 },
        { domain: 'globex.com', confidence: 0.15 },
      ],
    });
  });

  it('a provider counts once, whatever it repeats', () => {
    expect(consensus([answer('a', 'acme.com'), answer('a', 'acme.com'), answer('a', 'acme.com')], equal)).toMatchObject({
      confidence: 0.7,
      reason: 'one provider names acme.com',
    });
  });
});

describe('People Data Labs enrichment', () => {
  const pdl = createPeopleDataLabsEnrichment({ apiKey: KEYS.pdl });

  it('maps the company and its decision makers, most senior first', async () => {
    expect(await pdl.enrich({ ip: IP.acme, website: 'customer.example.com' }, signal())).toEqual({
      provider: 'peopledatalabs',
      domain: 'acme.com',
      company_name: 'Acme',
      confidence: 0.85,
      people: [
        { name: 'Carol Chief', title: 'Chief Executive Officer', linkedin_url: 'https://linkedin.com/in/carolchief' },
        { name: 'Vic Vee', title: 'Vp Marketing', linkedin_url: null },
        { name: 'Dana Director', title: 'Director Of Sales', linkedin_url: 'https://linkedin.com/in/danadirector' },
      ],
    });
    expect(searches).toEqual([
      {
        query: {
          bool: {
            must: [{ term: { job_company_website: 'acme.com' } }, { terms: { job_title_levels: ['owner', 'cxo', 'partner', 'vp', 'director'] } }],
          },
        },
        size: 5,
        titlecase: true,
      },
    ]);
  });

  it('a company without decision makers on record has no people', async () => {
    expect(await pdl.enrich({ ip: IP.fuzzy }, signal())).toEqual({
      provider: 'peopledatalabs',
      domain: 'globex.com',
      company_name: 'Globex',
      confidence: 0.65,
      people: [],
    });
  });

  it('a VPN address is no answer and costs no person search', async () => {
    expect(await pdl.enrich({ ip: IP.vpn }, signal())).toBeNull();
    expect(searches).toEqual([]);
  });

  it('no match (404) is null; a 5xx throws with its status', async () => {
    expect(await pdl.enrich({ ip: IP.noData }, signal())).toBeNull();
    await expect(pdl.enrich({ ip: IP.down }, signal())).rejects.toThrow('peopledatalabs answered HTTP 500: Something went wrong');
  });

  it('honours the signal it is given', async () => {
    await expect(pdl.enrich({ ip: IP.mixed }, AbortSignal.timeout(100))).rejects.toThrow();
  });
});
