import { LocalIpData, OwnershipSource, type ProviderAnswer, type SourceAnswer } from '@sightline/core';
import { CONSENSUS_RULES, companyNameKey, consensus, SOURCE_ORIGINS } from '@sightline/core/ip/consensus';
import { answerFromDatabases, detectDatabaseKind, readDatabaseRecord } from '@sightline/core/ip/operator-databases/index';
import { interpretNetwork, publicAddress, type RoutingOwner, readNetwork } from '@sightline/core/ip/rdap/index';
import { classifyReverseName, lookupAddress } from '@sightline/core/ip/reverse-dns/index';
import { readAsnBase } from '@sightline/host';
import { beforeAll, describe, expect, it } from 'vitest';
import ownershipRules from '../packages/core/data/ownership-rules.json' with { type: 'json' };

/*
 * Consensus over the free sources (issue 29 §2.5), each vote made by the source's own code from the
 * data it reads: ownership from the shipped ASN data, rDNS from a confirmed PTR name, RDAP from an
 * RFC 9083 network object, MaxMind from a database record. Paid providers' answers are written as
 * their adapters return them (the adapters are tested against their documented APIs in
 * ip-providers.test.ts). The formula and its worked examples are the header of core's consensus.ts.
 */

let local: LocalIpData;
let ownership: OwnershipSource;
beforeAll(async () => {
  const base = await readAsnBase();
  local = LocalIpData.fromBase(base);
  ownership = OwnershipSource.fromBase(base);
});

const equal = { weights: {} };

/** Allied Irish Banks' AS16282: a company's own network that nobody reviewed, so named without a domain. */
const AIB = '194.69.199.1';

function factsOf(ip: string) {
  const facts = local.facts(ip, () => null);
  if (!facts) throw new Error(`no facts for ${ip}`);
  return facts;
}

function ownershipVote(ip: string): SourceAnswer {
  const vote = ownership.answer(factsOf(ip));
  if (!vote) throw new Error(`ownership has no vote for ${ip}`);
  return vote;
}

/** The local class as a voter would be made of it (resolve-ip.ts's fromLocal confidences). */
function localVote(ip: string): SourceAnswer {
  const f = factsOf(ip);
  const c = f.company;
  return {
    provider: 'local',
    domain: c?.domain ?? null,
    company_name: c?.company_name ?? null,
    traffic_type: f.traffic_type,
    confidence: c ? c.confidence : f.traffic_type === 'business' ? 0.5 : 0.9,
    country_code: f.country_code,
    reason: f.reason,
  };
}

function rdnsVote(ptr: string, ip: string): SourceAnswer {
  const address = lookupAddress(ip);
  const vote = address && classifyReverseName(ptr, address);
  if (!vote) throw new Error(`no vote for ${ptr}`);
  return vote;
}

type Props = [name: string, value: string][];
const vcard = (props: Props) => ['vcard', [['version', {}, 'text', '4.0'], ...props.map(([n, v]) => [n, {}, 'text', v])]];

/** RDAP's vote on an RFC 9083 network object with one registrant, as a registry's server writes it. */
function rdapVote(ip: string, range: [string, string], type: string, holder: string, email: string, routing: RoutingOwner | null): SourceAnswer {
  const queried = publicAddress(ip);
  if (!queried) throw new Error(ip);
  const network = readNetwork(
    JSON.stringify({
      objectClassName: 'ip network',
      handle: 'NET-TEST-1',
      startAddress: range[0],
      endAddress: range[1],
      ipVersion: 'v4',
      name: 'TEST-NET',
      type,
      entities: [
        {
          objectClassName: 'entity',
          handle: 'ORG-1',
          roles: ['registrant'],
          vcardArray: vcard([
            ['fn', holder],
            ['kind', 'org'],
            ['email', email],
          ]),
        },
      ],
    }),
    queried,
  );
  const vote = network && interpretNetwork(network, routing);
  if (!vote) throw new Error(`RDAP has no vote for ${holder}`);
  return vote;
}

const EXAMPLE_BB: RoutingOwner = { name: 'EXBB-AS - Example Broadband Inc, US', domains: ['example-broadband.net'], trafficType: 'isp' };
const ACME = '63.140.17.77';
const acmeRdap = () => rdapVote(ACME, ['63.140.17.0', '63.140.17.255'], 'REASSIGNED', 'Acme Widgets Inc', 'noc@acme-widgets.com', EXAMPLE_BB);
const aibRdap = (holder = 'ALLIED IRISH BANKS, P.L.C.') =>
  rdapVote(AIB, ['194.69.199.0', '194.69.199.255'], 'ASSIGNED PI', holder, 'hostmaster@aib.ie', null);

/** A paid provider's answer as its adapter returns it (no stated confidence: consensus's 0.7). */
const paid = (provider: string, domain: string, company_name: string): ProviderAnswer => ({
  provider,
  domain,
  company_name,
  traffic_type: 'business',
  confidence: null,
  country_code: null,
});

describe('a company named by name alone', () => {
  it('ownership alone names the company with no domain: identified, likely, domain null, not in matches', () => {
    const vote = ownershipVote(AIB);
    expect(vote).toMatchObject({ traffic_type: 'business', company_name: 'Allied Irish Banks PLC', domain: null });
    expect(consensus([vote], equal)).toEqual({
      identified: true,
      domain: null,
      company_name: 'Allied Irish Banks PLC',
      confidence: ownershipRules.confidence.company,
      confidence_level: 'likely',
      traffic_type: 'business',
      reason: 'one source names Allied Irish Banks PLC (AS16282 is owned by Allied Irish Banks PLC)',
      matches: [],
    });
  });

  it('names compare without AS handles, case, punctuation or legal forms', () => {
    const ford = companyNameKey('Ford Motor Company');
    expect(ford).toBe('ford motor');
    for (const spelling of ['FORD-ASN-01 - Ford Motor Company', 'Ford Motor Co.', 'FORD MOTOR COMPANY, INC.', 'AS3389 Ford Motor Company']) {
      expect(companyNameKey(spelling)).toBe(ford);
    }
    expect(companyNameKey('Allied Irish Banks, p.l.c.')).toBe(companyNameKey('Allied Irish Banks PLC'));
    expect(companyNameKey('Ford Credit')).not.toBe(ford);
    // Nothing but a handle, or a legal form, names nobody.
    expect(companyNameKey('FORD-ASN-01')).toBeNull();
    expect(companyNameKey('Ltd.')).toBeNull();
    expect(companyNameKey('  ')).toBeNull();
  });
});

describe('two independent sources agreeing reach confirmed', () => {
  it('ownership and RDAP naming one company, spelled differently, are confirmed with the domain RDAP links to the name', () => {
    const own = ownershipVote(AIB);
    const rdap = aibRdap();
    expect(rdap).toMatchObject({ traffic_type: 'business', company_name: 'ALLIED IRISH BANKS, P.L.C.', domain: 'aib.ie' });
    const result = consensus([own, rdap], equal);
    expect(result).toMatchObject({
      identified: true,
      domain: 'aib.ie',
      company_name: 'ALLIED IRISH BANKS, P.L.C.',
      confidence_level: 'confirmed',
      traffic_type: 'business',
      matches: [{ domain: 'aib.ie', confidence: result.confidence }],
    });
    // (0.65 + 0.7) / 2 × (1 + 0.2 + 0.1): two origins of two kinds.
    expect(result.confidence).toBe(0.878);
    expect(result.reason).toBe(`2 sources agree on aib.ie (${own.reason}; ${rdap.reason})`);
  });

  it('rDNS and RDAP on the same domain are confirmed', () => {
    const rdns = rdnsVote('gw1.acme-widgets.com', ACME);
    const rdap = acmeRdap();
    expect(rdns).toMatchObject({ provider: 'rdns', traffic_type: 'business', domain: 'acme-widgets.com', company_name: null });
    expect(rdap).toMatchObject({ provider: 'rdap', domain: 'acme-widgets.com', company_name: 'Acme Widgets Inc' });
    // Each alone is likely at most.
    expect(consensus([rdns], equal)).toMatchObject({ identified: true, confidence_level: 'likely', company_name: null });
    expect(consensus([rdap], equal)).toMatchObject({ identified: true, confidence_level: 'likely' });
    expect(consensus([rdns, rdap], equal)).toMatchObject({
      identified: true,
      domain: 'acme-widgets.com',
      company_name: 'Acme Widgets Inc',
      confidence: 0.813,
      confidence_level: 'confirmed',
    });
  });

  it('a paid provider and a free source agreeing are confirmed; either alone is likely', () => {
    const rdns = rdnsVote('gw1.acme-widgets.com', ACME);
    const ipinfo = paid('ipinfo', 'acme-widgets.com', 'Acme Widgets');
    expect(consensus([ipinfo], equal)).toMatchObject({ confidence: 0.7, confidence_level: 'likely' });
    expect(consensus([ipinfo, rdns], equal)).toEqual({
      identified: true,
      domain: 'acme-widgets.com',
      company_name: 'Acme Widgets',
      confidence: 0.845,
      confidence_level: 'confirmed',
      traffic_type: 'business',
      reason: `2 sources agree on acme-widgets.com (ipinfo names acme-widgets.com; ${rdns.reason})`,
      matches: [{ domain: 'acme-widgets.com', confidence: 0.845 }],
    });
  });

  it('a name-only vote joins the domain another source gives for that name: ownership, RDAP and a paid provider on one company', () => {
    const result = consensus([ownershipVote(AIB), aibRdap('Allied Irish Banks, p.l.c.'), paid('snitcher', 'aib.ie', 'AIB Group')], equal);
    expect(result).toMatchObject({ identified: true, domain: 'aib.ie', confidence: 1, confidence_level: 'confirmed' });
    expect(result.reason).toMatch(/^3 sources agree on aib\.ie/);
  });
});

describe('sources of one origin are one vote', () => {
  it('ownership repeating the local class does not confirm it: the local data and ownership are one origin', () => {
    // 17.253.144.10: Apple's network, a local business record, which ownership repeats.
    const apple = '17.253.144.10';
    const lv = localVote(apple);
    const own = ownershipVote(apple);
    expect(lv).toMatchObject({ traffic_type: 'business', domain: 'apple.com' });
    expect(own).toMatchObject({ traffic_type: 'business', domain: 'apple.com' });
    const result = consensus([lv, own], equal);
    expect(result).toMatchObject({ identified: true, domain: 'apple.com', confidence: CONSENSUS_RULES.singleSourceCap, confidence_level: 'likely' });
    expect(result.reason).toBe(`one source names apple.com (${lv.reason} and ${own.reason}, from one origin (asn-registry))`);
    // Taken as two origins, the same two votes would have confirmed it.
    expect(consensus([lv, own], { ...equal, origins: { local: 'local-data' } })).toMatchObject({ confidence_level: 'confirmed' });
  });

  it('an ISP class and ownership’s repeat of it are one report, not two', () => {
    const kpn = '145.7.0.1';
    const result = consensus([localVote(kpn), ownershipVote(kpn)], equal);
    expect(result).toMatchObject({ traffic_type: 'isp', identified: false, confidence: 0.9 });
    expect(result.reason).toMatch(/^one source reports an ISP network \(/);
  });

  it('MaxMind’s AS-level answer agreeing with ownership on the owner is the ASN registry once: likely, as ownership alone', () => {
    const own = ownershipVote(AIB);
    const kind = detectDatabaseKind('GeoLite2-ASN');
    if (!kind) throw new Error('GeoLite2-ASN not detected');
    const maxmind = answerFromDatabases(
      'maxmind',
      [
        {
          kind,
          facts: readDatabaseRecord(kind.kind, {
            autonomous_system_number: 16282,
            autonomous_system_organization: 'AIB-AS - Allied Irish Banks PLC',
          }),
        },
      ],
      { ownerTraffic: () => own.traffic_type },
    );
    expect(maxmind).toMatchObject({ provider: 'maxmind', traffic_type: 'business' });
    if (!maxmind) throw new Error('no MaxMind answer');
    expect(companyNameKey(maxmind.company_name)).toBe(companyNameKey(own.company_name));
    const result = consensus([own, maxmind], equal);
    expect(result).toMatchObject({
      identified: true,
      domain: null,
      company_name: 'Allied Irish Banks PLC',
      confidence: ownershipRules.confidence.company,
      confidence_level: 'likely',
    });
    expect(result.reason).toMatch(/^one source names Allied Irish Banks PLC/);
    // IPinfo Lite's AS-level answer is the same origin again.
    expect(consensus([own, maxmind, { ...maxmind, provider: 'ipinfo-lite' }], equal)).toMatchObject({ confidence_level: 'likely' });
  });

  it('origins are data: two sources put in one origin no longer confirm each other', () => {
    const votes = [rdnsVote('gw1.acme-widgets.com', ACME), acmeRdap()];
    expect(SOURCE_ORIGINS).toMatchObject({ rdns: 'dns', rdap: 'rir', ownership: 'asn-registry' });
    expect(consensus(votes, { ...equal, origins: { rdns: 'rir' } })).toMatchObject({
      identified: true,
      confidence: 0.65,
      confidence_level: 'likely',
    });
  });
});

describe('disagreement and risky traffic pull a company down', () => {
  it('ownership names a company and rDNS shows an ISP’s generated naming: not identified', () => {
    const own = ownershipVote(AIB);
    const dynamic = rdnsVote('dsl-194-69-199-1.pool.example-telecom.ie', AIB);
    expect(dynamic).toMatchObject({ traffic_type: 'isp' });
    expect(consensus([own, dynamic], equal)).toEqual({
      identified: false,
      domain: null,
      company_name: null,
      confidence: 0.286,
      confidence_level: 'unconfirmed',
      traffic_type: 'business',
      reason: `one of 2 sources names Allied Irish Banks PLC but one source reports an ISP network; not enough to identify the company (${own.reason}; ${dynamic.reason})`,
      matches: [],
    });
  });

  it('a listed ISP domain outweighs ownership’s company: ISP traffic, nothing charged', () => {
    const listed = rdnsVote('c-194-69-199-1.hsd1.nj.comcast.net', AIB);
    expect(listed).toMatchObject({ traffic_type: 'isp' });
    expect(consensus([ownershipVote(AIB), listed], equal)).toMatchObject({ identified: false, traffic_type: 'isp' });
  });

  it('two sources naming different companies are contested', () => {
    const result = consensus([ownershipVote(AIB), rdnsVote('gw1.acme-widgets.com', AIB)], equal);
    expect(result).toMatchObject({ identified: false, confidence_level: 'unconfirmed', traffic_type: 'business' });
    expect(result.reason).toMatch(/^sources disagree: Allied Irish Banks PLC \(1 source\), acme-widgets\.com \(1 source\)/);
    expect(result.matches).toEqual([{ domain: 'acme-widgets.com', confidence: 0.3 }]);
  });

  it('a paid provider naming a company without a domain identifies nobody, as before free sources voted', () => {
    const byName: ProviderAnswer = { ...paid('ipinfo', 'acme.com', 'Acme Inc'), domain: null };
    expect(consensus([byName], equal)).toMatchObject({ identified: false, domain: null, company_name: null });
  });

  it('a name never merges two domains: one name given for two domains leaves them two companies', () => {
    const a = paid('ipinfo', 'acme.com', 'Acme Inc');
    const b = paid('snitcher', 'acme.co.uk', 'ACME Ltd');
    // A free source's name-only vote (a paid provider's alone names no company).
    const byName: ProviderAnswer = { ...a, provider: 'ownership', domain: null, company_name: 'Acme' };
    const result = consensus([a, b, byName], equal);
    expect(result).toMatchObject({ identified: false });
    expect(result.reason).toBe('providers disagree: Acme (1 provider), acme.co.uk (1 provider), acme.com (1 provider)');
    expect(result.matches.map((m) => m.domain).sort()).toEqual(['acme.co.uk', 'acme.com']);
  });

  it("a name that may be the one domain's company under another name joins it (IBM beside ibm.com)", () => {
    const owner: SourceAnswer = {
      provider: 'ownership',
      traffic_type: 'business',
      domain: null,
      company_name: 'International Business Machines Corporation',
      confidence: 0.65,
      country_code: null,
      reason: 'AS2140 is owned by International Business Machines Corporation',
    };
    expect(consensus([paid('ipinfo', 'ibm.com', 'IBM'), owner], equal)).toMatchObject({
      identified: true,
      domain: 'ibm.com',
      confidence_level: 'confirmed',
    });
  });

  it('a source counts once on the business side, however many business claims it makes', () => {
    const vote = (provider: string, traffic_type: SourceAnswer['traffic_type'], company_name: string | null, confidence: number): SourceAnswer => ({
      provider,
      traffic_type,
      domain: null,
      company_name,
      confidence,
      country_code: null,
      reason: provider,
    });
    // The owner names a company and MaxMind (the same origin: the ASN registry) says business with no name;
    // reverse DNS and RDAP both say ISP. The ISP side is two origins against one.
    const result = consensus(
      [
        vote('ownership', 'business', 'Acme Widgets', 0.65),
        vote('maxmind', 'business', null, 0.6),
        vote('rdns', 'isp', null, 0.6),
        vote('rdap', 'isp', null, 0.6),
      ],
      equal,
    );
    expect(result).toMatchObject({ identified: false, traffic_type: 'isp' });
  });
});
