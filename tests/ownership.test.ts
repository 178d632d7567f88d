import { cleanCompanyName, LocalIpData, type OwnershipRules, OwnershipSource } from '@sightline/core';
import { openCountryReader, readAsnBase } from '@sightline/host';
import { beforeAll, describe, expect, it } from 'vitest';
import shippedRules from '../packages/core/data/ownership-rules.json' with { type: 'json' };

let base: Awaited<ReturnType<typeof readAsnBase>>;
let local: LocalIpData;
let ownership: OwnershipSource;
let country: Awaited<ReturnType<typeof openCountryReader>>;
beforeAll(async () => {
  base = await readAsnBase();
  local = LocalIpData.fromBase(base);
  ownership = OwnershipSource.fromBase(base);
  country = await openCountryReader();
});

/** A copy of the shipped rules for a test to change. */
const rules = (): OwnershipRules => structuredClone(shippedRules) as OwnershipRules;

/** The local facts of an address as the cache-miss lookup reads them, and the ownership vote on them. */
const at = (ip: string) => {
  const facts = local.facts(ip, (a) => country.get(a)?.country_code ?? null);
  if (!facts) throw new Error(`no facts for ${ip}`);
  return { facts, vote: ownership.answer(facts) };
};

describe('a network a company owns is that company, on ownership alone', () => {
  it.each([
    ['19.12.96.1', 'Ford Motor Company', 'ford.com', 3389],
    ['171.159.64.1', 'Bank of America', 'bankofamerica.com', 10794],
    ['159.53.224.1', 'JPMorgan Chase & Co.', 'jpmorganchase.com', 7743],
    ['160.83.1.1', 'Deutsche Bank AG', 'db.com', 8373],
    ['194.138.20.1', 'Siemens AG', 'siemens.com', 198573],
    ['160.46.226.1', 'BMW AG', 'bmw.com', 8590],
  ])('%s → business, %s (%s)', (ip, company_name, domain, asn) => {
    const { facts, vote } = at(ip);
    expect(facts.asn).toBe(asn);
    expect(vote).toMatchObject({ provider: 'ownership', traffic_type: 'business', company_name, domain });
    expect(vote?.reason).toContain(`AS${asn}`);
  });

  it('a network shaped like a company’s own, that nobody reviewed, is that company by name, with no domain', () => {
    // Allied Irish Banks' AS16282: one small range, no IPv6, an old ASN, a trade word in the name.
    expect(at('194.69.199.1').vote).toMatchObject({
      provider: 'ownership',
      traffic_type: 'business',
      company_name: 'Allied Irish Banks PLC',
      domain: null,
      confidence: 0.65,
    });
  });

  it('a domain is never guessed from a name, and an ASN the data does not know gets no vote', () => {
    // With the bar lowered until Andrews & Arnold's network passes, it is named, and still has no domain.
    const loose = OwnershipSource.fromBase(base, { rules: { ...rules(), score: { ...rules().score, threshold: -100, isp_below: -200 } } });
    expect(loose.answer(at('81.2.69.142').facts)).toMatchObject({ traffic_type: 'business', company_name: 'Andrews & Arnold Ltd', domain: null });
    const { facts } = at('19.12.96.1');
    expect(ownership.answer({ ...facts, asn: 4_200_000_001, org: 'EXAMPLE-AS - Example Widgets GmbH', company: null })).toBeNull();
  });

  it('ownership alone is likely, not confirmed: its confidence is above consensus’s likely bar and below the single-source cap', () => {
    const { vote } = at('19.12.96.1');
    expect(vote?.confidence).toBeGreaterThanOrEqual(0.5);
    expect(vote?.confidence).toBeLessThan(0.75);
  });
});

describe('an ISP, carrier or host is never a business', () => {
  it.each([
    ['89.246.64.1', '1&1 Versatel'],
    ['145.7.0.1', 'KPN'],
    ['82.64.0.1', 'Free SAS'],
    ['85.0.0.1', 'Swisscom'],
    ['126.0.0.1', 'SoftBank'],
    ['86.40.0.1', 'Eircom'],
    ['2.4.0.1', 'Orange'],
    ['80.58.0.1', 'Telefónica'],
  ])('%s (%s) → isp', (ip) => {
    const { facts, vote } = at(ip);
    expect(facts.traffic_type).toBe('isp');
    expect(vote).toMatchObject({ provider: 'ownership', traffic_type: 'isp', company_name: null, domain: null });
  });

  it('a hosting range stays hosting, and a VPN exit a VPN', () => {
    expect(at('3.5.140.1').vote?.traffic_type).toBe('hosting');
    expect(at('185.65.134.1').vote?.traffic_type).toBe('vpn');
  });

  it('an unclassified network shaped like an access network is voted isp, not a company', () => {
    // Andrews & Arnold: a UK ISP no curated list or name rule knows; many ranges, IPv6, a /16 or more.
    const { facts, vote } = at('81.2.69.142');
    expect(facts.traffic_type).toBeNull();
    expect(vote).toMatchObject({ provider: 'ownership', traffic_type: 'isp', company_name: null, domain: null });
    expect(vote?.reason).toContain('AS20712');
  });

  it('between the two bars the source abstains, leaving the address to the other sources', () => {
    const strict = OwnershipSource.fromBase(base, { rules: { ...rules(), score: { ...rules().score, threshold: 100, isp_below: -100 } } });
    expect(strict.answer(at('81.2.69.142').facts)).toBeNull();
    // Reviewed company networks and the local classes answer whatever the score says.
    expect(strict.answer(at('19.12.96.1').facts)?.traffic_type).toBe('business');
    expect(strict.answer(at('145.7.0.1').facts)?.traffic_type).toBe('isp');
  });

  it('an address with no known owner gets no vote', () => {
    const facts = local.facts('0.0.0.1', () => null);
    expect(facts && ownership.answer(facts)).toBeNull();
  });
});

describe('owner names are cleaned of AS handles and registry noise', () => {
  it.each([
    ['CreditSuisseGroup-AS - Credit Suisse Group', 'Credit Suisse Group'],
    ['FORD-ASN-01 - Ford Motor Company', 'Ford Motor Company'],
    ['AS267712 - EL ALAMO S.R.L', 'El Alamo S.R.L'],
    ['VoIP-IC-AS Swisscom (Schweiz) AG', 'Swisscom (Schweiz) AG'],
    ['Taprap Nigeria Limited - Taprap Nigeria Limited', 'Taprap Nigeria Limited'],
    ['Filhonet Telecomunicacoes Ltda - ME', 'Filhonet Telecomunicacoes Ltda'],
    ['PALO ALTO NETWORKS', 'Palo Alto Networks'],
    ['SIEMENS AG', 'Siemens AG'],
    ['CJSC PATIO', 'CJSC Patio'],
    ['STERICYCLE, INC.', 'Stericycle, Inc.'],
    ['USFHP-PACMED - PACMED CLINICS', 'Pacmed Clinics'],
    ['XTURBO PROVEDOR DE INTERNET LTDA - EPP', 'Xturbo Provedor de Internet Ltda'],
    ['Bank of America, National Association', 'Bank of America, National Association'],
    ['Diamantis Masoutis S.A. - Super Market', 'Diamantis Masoutis S.A. - Super Market'],
    ['Example Corp (AS64500)', 'Example Corp'],
  ])('%s → %s', (raw, clean) => {
    expect(cleanCompanyName(raw)).toBe(clean);
  });

  it('a name that is only a handle is no name', () => {
    expect(cleanCompanyName('AS64500')).toBeNull();
    expect(cleanCompanyName('FORD-ASN-01')).toBeNull();
  });
});

describe('the data loaded with ownership as its owner judge carries the vote with each answer', () => {
  it('every path (IPv4 shipped, IPv4 under an imported layer, IPv6) gives the vote ownership gives on the same facts', () => {
    const judged = LocalIpData.fromBase(
      base,
      // An operator's import calls Ford's 19.12.96.0/24 a consumer ISP range.
      { overlays4: [{ start: 0x130c6000, end: 0x130c60ff, kind: 'isp', provider: 'Example Fibre' }] },
      ownership,
    );
    const countryOf = (a: string) => country.get(a)?.country_code ?? null;
    for (const ip of ['19.12.96.1', '19.12.97.1', '194.69.199.1', '89.246.64.1', '2a00:1450:4001::1', '8.8.8.8']) {
      const facts = judged.facts(ip, countryOf);
      if (!facts) throw new Error(`no facts for ${ip}`);
      expect(facts.owner_vote, ip).toEqual(ownership.answer(facts));
      // The IPv4 answer is made once per combination of facts: a second lookup reads the same vote.
      expect(judged.facts(ip, countryOf)?.owner_vote, ip).toEqual(facts.owner_vote);
    }
    expect(judged.facts('19.12.96.1', countryOf)?.owner_vote).toMatchObject({ traffic_type: 'isp', company_name: null });
    expect(judged.facts('19.12.97.1', countryOf)?.owner_vote).toMatchObject({ traffic_type: 'business', company_name: 'Ford Motor Company' });
    // Without a judge the facts say so (undefined), so resolveFree asks the source itself.
    expect(local.facts('19.12.97.1', countryOf)?.owner_vote).toBeUndefined();
  });
});
