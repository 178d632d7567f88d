/**
 * ICP creates under concurrency, on real Postgres (DATABASE_URL, a 20-connection pool, so the
 * Promise.all batches below run on parallel backends and meet on row locks): two identical
 * requests at the same moment give one ICP, and creates racing at the plan limit leave exactly the
 * limit. The account lock in sl_create_icp is what holds the limit: the same race against a copy
 * without it is shown to overshoot. On PGlite everything serialises, so these are skipped there.
 */
import { randomUUID } from 'node:crypto';
import { scoreIdentifications } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { createIcpVia, icpAction, icpCount, icpStep, seedIcpAccount } from './support/icps.ts';

let env: TestEnv;
beforeAll(async () => {
  if (usingPostgres) env = await createTestEnv({ pool: 20 });
});
afterAll(async () => {
  if (usingPostgres) await env.close();
});

/** Makes sl_create_icp (or a copy named `name`) wait between counting and inserting, widening the race window. */
async function slowCreate(name: string, opts: { withoutAccountLock: boolean }) {
  const [def] = await env.db<{ src: string }>`select pg_get_functiondef('sl_create_icp(uuid, uuid, jsonb, integer, uuid)'::regprocedure) as src`;
  let src = String(def?.src);
  src = src.replace(/FUNCTION public\.sl_create_icp\(/, `FUNCTION public.${name}(`);
  src = src.replace(/(select count\(\*\) into v_count from icps where account_id = p_account;)/, '$1\n  perform pg_sleep(0.05);');
  if (opts.withoutAccountLock) src = src.replace(/from accounts where id = p_account for update;/, 'from accounts where id = p_account;');
  expect(src).toContain('pg_sleep');
  await env.db.exec(src);
}

describe.skipIf(!usingPostgres)('ICP creates at the same moment', () => {
  it('runs on parallel backends (the probe: concurrent sleeps overlap)', async () => {
    const started = Date.now();
    await Promise.all(Array.from({ length: 5 }, () => env.db`select pg_sleep(0.2)`));
    expect(Date.now() - started).toBeLessThan(700);
  });

  it('two identical requests at the same moment give one ICP: one 201, and a 202 or the same 201', async () => {
    const who = await seedIcpAccount(env);
    for (let round = 0; round < 5; round++) {
      const key = randomUUID();
      const body = { action: 'create_icp', product_id: who.product_id, name: `Twin ${round}` };
      const answers = await Promise.all([icpAction(env, who, body, key), icpAction(env, who, body, key)]);
      const statuses = answers.map((a) => a.status).sort();
      expect([
        [201, 201],
        [201, 202],
      ]).toContainEqual(statuses);
      const created = answers.filter((a) => a.status === 201);
      if (created.length === 2) expect(created[0]?.body).toEqual(created[1]?.body);
      for (const a of answers.filter((x) => x.status === 202)) expect(a.body).toMatchObject({ success: true, status: 'processing' });
      const [n] = await env.db<{ n: number }>`select count(*)::int as n from icps where account_id = ${who.account_id} and name = ${`Twin ${round}`}`;
      expect(n?.n).toBe(1);
      // Once settled, a repeat answers the 201.
      const after = await icpAction(env, who, body, key);
      expect(after.status).toBe(201);
      expect(after.body.id).toBe(created[0]?.body.id);
    }
    await env.settle();
  });

  it('two identical state actions at the same moment act once', async () => {
    const who = await seedIcpAccount(env);
    const id = String((await createIcpVia(env, who, {})).id);
    await env.settle();
    await icpStep(env, who, 'approve_icp', id);
    const key = randomUUID();
    const answers = await Promise.all([
      icpAction(env, who, { action: 'activate_icp', icp_id: id }, key),
      icpAction(env, who, { action: 'activate_icp', icp_id: id }, key),
    ]);
    expect([
      [200, 200],
      [200, 202],
    ]).toContainEqual(answers.map((a) => a.status).sort());
    const [row] = await env.db<{ workflow_status: string }>`select workflow_status from icps where id = ${id}`;
    expect(row?.workflow_status).toBe('active');
    await env.settle();
  });

  it.each([
    ['free', 1],
    ['starter', 3],
    ['growth', 6],
  ] as const)('creates racing at the %s plan’s limit leave exactly %i ICPs; the rest are 403 naming the plan', async (plan, limit) => {
    const who = await seedIcpAccount(env, { plan });
    const answers = await Promise.all(
      Array.from({ length: limit + 6 }, () => icpAction(env, who, { action: 'create_icp', product_id: who.product_id })),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(limit);
    const refused = answers.filter((a) => a.status !== 201);
    expect(refused).toHaveLength(6);
    for (const r of refused) {
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({
        plan,
        icp_limit: limit,
        icp_count: limit,
        error: expect.stringContaining(`the ${plan} plan allows ${limit} ICP`),
      });
    }
    expect(await icpCount(env, who.account_id)).toBe(limit);
    // Every refused key was given back.
    const [held] = await env.db<{ n: number }>`
      select count(*)::int as n from idempotent_requests where account_id = ${who.account_id} and state = 'processing'`;
    expect(held?.n).toBe(0);
    await env.settle();
  });

  it('the account lock is what holds the limit: the same race without it overshoots', async () => {
    await slowCreate('sl_create_icp_unlocked', { withoutAccountLock: true });
    await slowCreate('sl_create_icp_locked', { withoutAccountLock: false });
    const run = async (unlocked: boolean) => {
      const who = await seedIcpAccount(env, { plan: 'free' });
      await Promise.all(
        Array.from({ length: 5 }, () =>
          (unlocked
            ? env.db`select sl_create_icp_unlocked(${who.account_id}::uuid, ${who.product_id}::uuid, '{}'::jsonb, null, null)`
            : env.db`select sl_create_icp_locked(${who.account_id}::uuid, ${who.product_id}::uuid, '{}'::jsonb, null, null)`
          ).catch(() => undefined),
        ),
      );
      return icpCount(env, who.account_id);
    };
    expect(await run(false)).toBe(1);
    expect(await run(true)).toBeGreaterThan(1);
  });
});

describe.skipIf(!usingPostgres)('scoring workers at the same moment', () => {
  it('share the queue without deadlock and write each score once', async () => {
    const who = await seedIcpAccount(env);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const icp = await createIcpVia(env, who, {
        name: `Scoring ${i}`,
        description: 'd',
        job_titles: [],
        pain_points: [],
        value_drivers: [],
        industry_focus: ['Computer Software'],
        company_characteristics: { countries: ['US'] },
      });
      ids.push(String(icp.id));
    }
    await env.settle();
    for (const id of ids) {
      await icpStep(env, who, 'approve_icp', id);
    }
    // 600 identified identifications of the account, unscored, as the tracker worker leaves them.
    await env.db`
      insert into identifications (website_id, ip, api_key_id, period_start, status, identified_at, identification_type,
                                   traffic_type, country, domain, company_name, industry)
      select ${who.website_id}::uuid, ('10.9.' || (g / 250) || '.' || (g % 250))::inet, ${who.api_key_id}::uuid, now(), 'identified', now(),
             'company', 'business', case when g % 2 = 0 then 'US' else 'DE' end, 'example.com', 'Example', 'Computer Software'
      from generate_series(1, 600) g`;
    // Activations queue backfills while workers also take the new identifications.
    await Promise.all(ids.map((id) => icpAction(env, who, { action: 'activate_icp', icp_id: id })));
    const reports = await Promise.all(Array.from({ length: 6 }, () => scoreIdentifications({ ctx: env.deps, input: { batchSize: 50 } })));
    await env.settle();
    await scoreIdentifications({ ctx: env.deps, input: {} });
    const [n] = await env.db<{ n: number; distinct_pairs: number }>`
      select count(*)::int as n, count(distinct (identification_id, icp_id))::int as distinct_pairs from icp_scores
      where icp_id in (select id from icps where account_id = ${who.account_id})`;
    expect(n).toEqual({ n: 1800, distinct_pairs: 1800 });
    const [left] = await env.db<{ n: number }>`
      select count(*)::int as n from identifications where website_id = ${who.website_id} and status = 'identified' and scored_at is null`;
    expect(left?.n).toBe(0);
    expect(reports.reduce((s, r) => s + r.scored, 0)).toBeLessThanOrEqual(600);
    const [pending] = await env.db<{ n: number }>`select count(*)::int as n from icps where account_id = ${who.account_id} and backfill_pending`;
    expect(pending?.n).toBe(0);
  });
});
