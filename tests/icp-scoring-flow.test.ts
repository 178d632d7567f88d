import { type ScoringIcp, scoreIdentification, scoreIdentifications, workTrackerQueue } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdentificationListResponse } from '../functions/identification-list/route.ts';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { createIcpVia, type IcpAccount, icpStep, seedIcpAccount } from './support/icps.ts';
import { realIpDeps, tableProvider } from './support/ip.ts';
import { pageView, type TrackedSite } from './support/tracker.ts';

/**
 * Scoring over identifications made the way production makes them (beacons through collect, the
 * tracker worker): an ICP that becomes active scores what the account has identified so far (the
 * backfill), an identification that lands later is scored when it lands, identification-list shows
 * the scores of active ICPs and filters on them, and a paused ICP's scores are hidden.
 */
const APPLE = (n: number) => `17.253.200.${n}`;
const GERMAN = '194.39.131.1';
const sap = tableProvider('alpha', { [GERMAN]: { domain: 'sap.com', company_name: 'SAP SE', confidence: 0.9, traffic_type: 'business' } });

let env: TestEnv;
let acct: IcpAccount;
let site: TrackedSite;
let other: IcpAccount;
let otherSite: TrackedSite;

/** Every ICP field given, so generation asks no engine (generated_by `caller`) and scores are known. */
const icpFields = (name: string, countries: string[]) => ({
  name,
  description: `Companies in ${countries.join(', ')}`,
  job_titles: [],
  pain_points: ['Unknown visitors'],
  value_drivers: ['Know who visits'],
  industry_focus: [],
  company_characteristics: { countries },
});

async function siteOf(who: IcpAccount): Promise<TrackedSite> {
  const [w] = await env.db<{
    domain: string;
    tracking_script_id: string;
  }>`select domain, tracking_script_id from websites where id = ${who.website_id}`;
  if (!w) throw new Error('no website');
  return { key: who.key, apiKeyId: who.api_key_id, trackingId: w.tracking_script_id, domain: w.domain, websiteId: who.website_id };
}

/** An ICP of `who`, generated, approved and activated; the activation's scoring kick awaited. */
async function activeIcp(who: IcpAccount, name: string, countries: string[]): Promise<string> {
  const id = String((await createIcpVia(env, who, icpFields(name, countries))).id);
  await env.settle();
  await icpStep(env, who, 'approve_icp', id);
  await icpStep(env, who, 'activate_icp', id);
  await env.settle();
  return id;
}

const identify = async (ips: string[], on: TrackedSite = site) => {
  for (const ip of ips) await pageView(env, on, ip);
  const report = await workTrackerQueue({ ctx: env.deps, input: {} });
  await env.settle(); // the scoring kick after the identifications settled
  return report;
};

type Listed = {
  id: string;
  company: { domain: string } | null;
  icp_scores: Array<{ icp_id: string; icp_name: string; score: number; qualified: boolean; ai_summary: string }>;
};

async function listed(query: Record<string, string> = {}, who: TrackedSite = site): Promise<Listed[]> {
  const res = await env.app.request(`http://localhost/identification-list?${new URLSearchParams({ website_id: who.websiteId, ...query })}`, {
    headers: { 'x-access-key': who.key },
  });
  expect(res.status).toBe(200);
  return IdentificationListResponse.parse(await res.json()).identifications as Listed[];
}

const byDomain = (rows: Listed[], domain: string) => rows.filter((r) => r.company?.domain === domain);

beforeAll(async () => {
  env = await createTestEnv({ ip: realIpDeps({ providers: [sap.provider], timeoutMs: 300 }) });
  acct = await seedIcpAccount(env);
  site = await siteOf(acct);
  other = await seedIcpAccount(env);
  otherSite = await siteOf(other);
});
afterAll(() => env.close());

describe('scoring identifications against active ICPs', () => {
  let us: string;
  let de: string;

  it('identifications made before any ICP is active carry no scores and nothing is qualified', async () => {
    const report = await identify([APPLE(1), APPLE(2), GERMAN]);
    expect(report.identifications.identified).toBe(3);
    const rows = await listed();
    expect(rows).toHaveLength(3);
    for (const r of rows) expect(r.icp_scores).toEqual([]);
    expect(await listed({ qualified: 'true' })).toEqual([]);
    expect(await listed({ qualified: 'false' })).toHaveLength(3);
    // The queue of new identifications is worked off: they were looked at, against no ICP.
    const [q] = await env.db<{ n: number }>`select count(*)::int as n from identifications where status = 'identified' and scored_at is null`;
    expect(q?.n).toBe(0);
  });

  it('an ICP that becomes active scores everything the account identified so far', async () => {
    await identify([APPLE(9)], otherSite); // another account's identification
    us = await activeIcp(acct, 'US companies', ['US']);
    const rows = await listed();
    const apple = byDomain(rows, 'apple.com');
    expect(apple).toHaveLength(2);
    for (const r of apple) {
      expect(r.icp_scores).toEqual([
        { icp_id: us, icp_name: 'US companies', score: 100, qualified: true, ai_summary: expect.stringMatching(/country US targeted/) },
      ]);
    }
    expect(byDomain(rows, 'sap.com')[0]?.icp_scores).toEqual([
      { icp_id: us, icp_name: 'US companies', score: 0, qualified: false, ai_summary: expect.stringMatching(/country DE outside target geography/) },
    ]);
    // Exactly what the scoring rules say for this ICP and identification.
    const icp: ScoringIcp = {
      id: us,
      name: 'US companies',
      industry_focus: [],
      job_titles: [],
      company_characteristics: { countries: ['US'] },
      qualify_threshold: 70,
    };
    const expected = scoreIdentification(icp, {
      identification_type: 'company',
      industry: null,
      employee_range: null,
      employees: null,
      country: 'US',
      location: null,
      job_title: null,
    });
    expect(apple[0]?.icp_scores[0]?.ai_summary).toBe(expected.ai_summary);
    // Only the account's own identifications are scored against its ICP.
    const [foreign] = await env.db<{ n: number }>`
      select count(*)::int as n from icp_scores s join identifications i on i.id = s.identification_id where i.website_id = ${otherSite.websiteId}`;
    expect(foreign?.n).toBe(0);
    const [icpRow] = await env.db<{ backfill_pending: boolean }>`select backfill_pending from icps where id = ${us}`;
    expect(icpRow?.backfill_pending).toBe(false);
  });

  it('identification-list filters on qualified: true lists what an active ICP qualifies, false the rest', async () => {
    expect((await listed({ qualified: 'true' })).map((r) => r.company?.domain)).toEqual(['apple.com', 'apple.com']);
    expect((await listed({ qualified: 'false' })).map((r) => r.company?.domain)).toEqual(['sap.com']);
    expect(await listed({ qualified: 'true', type: 'individual' })).toEqual([]);
  });

  it('an identification that lands later is scored when it lands', async () => {
    await identify([APPLE(3)]);
    const rows = byDomain(await listed(), 'apple.com');
    expect(rows).toHaveLength(3);
    for (const r of rows) expect(r.icp_scores.map((s) => [s.icp_id, s.score, s.qualified])).toEqual([[us, 100, true]]);
    expect(await listed({ qualified: 'true' })).toHaveLength(3);
  });

  it('shows every active ICP’s score, highest first', async () => {
    de = await activeIcp(acct, 'German companies', ['DE']);
    const rows = await listed();
    for (const r of byDomain(rows, 'apple.com')) {
      expect(r.icp_scores.map((s) => [s.icp_name, s.score, s.qualified])).toEqual([
        ['US companies', 100, true],
        ['German companies', 0, false],
      ]);
    }
    expect(byDomain(rows, 'sap.com')[0]?.icp_scores.map((s) => [s.icp_name, s.score])).toEqual([
      ['German companies', 100],
      ['US companies', 0],
    ]);
    expect(await listed({ qualified: 'false' })).toEqual([]);
  });

  it('pausing an ICP hides its scores and its qualification; activating it again shows them', async () => {
    await icpStep(env, acct, 'pause_icp', us);
    const rows = await listed();
    for (const r of rows) expect(r.icp_scores.map((s) => s.icp_id)).toEqual([de]);
    expect((await listed({ qualified: 'true' })).map((r) => r.company?.domain)).toEqual(['sap.com']);
    // Landing while paused: scored against the active ICP only.
    await identify([APPLE(4)]);
    const [paused] = await env.db<{ n: number }>`select count(*)::int as n from icp_scores where icp_id = ${us}`;
    expect(paused?.n).toBe(4); // the three Apple visitors and SAP, from before the pause

    await icpStep(env, acct, 'activate_icp', us);
    await env.settle();
    const back = byDomain(await listed(), 'apple.com');
    expect(back).toHaveLength(4);
    for (const r of back) expect(r.icp_scores.map((s) => s.icp_name)).toEqual(['US companies', 'German companies']);
  });

  it('deleting an ICP deletes its scores', async () => {
    await icpStep(env, acct, 'pause_icp', de);
    const res = await createIcpVia(env, acct, icpFields('Short-lived', ['FR']));
    await env.settle();
    await icpStep(env, acct, 'approve_icp', res.id);
    await icpStep(env, acct, 'activate_icp', res.id);
    await env.settle();
    const [before] = await env.db<{ n: number }>`select count(*)::int as n from icp_scores where icp_id = ${String(res.id)}`;
    expect(before?.n).toBe(5);
    await icpStep(env, acct, 'pause_icp', res.id);
    await icpStep(env, acct, 'delete_icp', res.id);
    const [after] = await env.db<{ n: number }>`select count(*)::int as n from icp_scores where icp_id = ${String(res.id)}`;
    expect(after?.n).toBe(0);
  });

  it('the backfill walks the account’s identifications in bounded batches, in id order, to the end', async () => {
    await env.db`delete from icp_scores where icp_id = ${us}`;
    await env.db`update icps set backfill_pending = true, backfill_after = null where id = ${us}`;
    const marks: Array<string | null> = [];
    for (let i = 0; i < 3; i++) {
      const report = await scoreIdentifications({ ctx: env.deps, input: { batchSize: 2, maxBatches: 1 } });
      const [row] = await env.db<{ backfill_pending: boolean; backfill_after: string | null }>`
        select backfill_pending, backfill_after::text from icps where id = ${us}`;
      marks.push(row?.backfill_pending ? (row.backfill_after ?? 'pending') : null);
      expect(report.backfilled, `batch ${i}`).toBe(i < 2 ? 2 : 1);
    }
    const ids = (
      await env.db<{ id: string }>`select id::text from identifications where website_id = ${site.websiteId} and status = 'identified' order by id`
    ).map((r) => r.id);
    expect(ids).toHaveLength(5);
    expect(marks).toEqual([ids[1], ids[3], null]);
    const [n] = await env.db<{ n: number }>`select count(*)::int as n from icp_scores where icp_id = ${us}`;
    expect(n?.n).toBe(5);
  });
});

// A held row lock needs a second connection: real Postgres only (PGlite has one).
describe.skipIf(!usingPostgres)('the scoring worker', () => {
  it('leaves identifications another worker holds, and picks them up once free', async () => {
    const fresh = await seedIcpAccount(env);
    const freshSite = await siteOf(fresh);
    const id = await activeIcp(fresh, 'US only', ['US']);
    await env.db`update identifications set scored_at = now() where scored_at is null`;
    for (const ip of [APPLE(20), APPLE(21)]) await pageView(env, freshSite, ip);
    // Settle the identifications without letting their kick score them: a held row lock stands in
    // for another worker's claim.
    await workTrackerQueue({ ctx: env.deps, input: {} });
    await env.settle();
    await env.db`update identifications set scored_at = null where website_id = ${freshSite.websiteId}`;
    await env.db`delete from icp_scores where icp_id = ${id}`;
    const held = await env.db.begin(async (tx) => {
      const [locked] = await tx<{ id: string }>`
        select id::text from identifications where website_id = ${freshSite.websiteId} order by id limit 1 for no key update`;
      const report = await scoreIdentifications({ ctx: env.deps, input: {} });
      return { locked: locked?.id, report };
    });
    expect(held.report.scored).toBe(1);
    const after = await scoreIdentifications({ ctx: env.deps, input: {} });
    expect(after.scored).toBe(1);
    const [n] = await env.db<{ n: number }>`select count(*)::int as n from icp_scores where icp_id = ${id}`;
    expect(n?.n).toBe(2);
  });
});
