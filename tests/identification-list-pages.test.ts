import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { seedDirectAccount } from './support/seed.ts';

/**
 * identification-list finds a page in an index of the website's identifications (newest first,
 * then by id) and asks whether an active ICP qualifies each one in an index of the qualifying
 * scores (migration 0034). The oracle is the list's definition written plainly: every
 * identification of the website that matches, sorted, sliced.
 */
let env: TestEnv;
let key: Awaited<ReturnType<typeof seedDirectAccount>>;
let accountId: string;

const list = async (query: Record<string, string>) => {
  const res = await env.app.request(`http://localhost/identification-list?${new URLSearchParams({ website_id: key.website_id, ...query })}`, {
    headers: { 'x-access-key': key.key },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { identifications: Json[] }).identifications;
};

/** The ids of the page the definition gives: the filters, newest first, then by id, sliced. */
async function expectedIds(f: { status?: string; type?: string; qualified?: boolean; limit: number; offset: number }) {
  const rows = await env.db<{ id: string }>`
    select i.id::text as id from identifications i
    where i.website_id = ${key.website_id}
      and (${f.status ?? null}::text is null or i.status = ${f.status ?? null})
      and (${f.type ?? null}::text is null or i.identification_type = ${f.type ?? null})
      and (${f.qualified ?? null}::boolean is null or ${f.qualified ?? null}::boolean = exists (
        select 1 from icp_scores s join icps p on p.id = s.icp_id
        where s.identification_id = i.id and s.qualified and p.workflow_status = 'active'))
    order by i.created_at desc, i.id
    limit ${f.limit} offset ${f.offset}`;
  return rows.map((r) => r.id);
}

beforeAll(async () => {
  env = await createTestEnv();
  // A direct account: its key acts on the account, so it sees the account's ICPs.
  key = await seedDirectAccount(env.deps, 'Scored');
  accountId = key.account_id;
  // 120 identifications at 9 distinct times (so pages cut through ties), identified (company or
  // individual), failed or pending; two active ICPs and a paused one, each scoring most of them.
  await env.db`
    insert into identifications (website_id, ip, api_key_id, period_start, status, created_at, identified_at, identification_type,
                                 traffic_type, reason, confidence, country, domain, company_name, person_linkedin_url, person_linkedin_name)
    select ${key.website_id}, '10.30.0.0'::inet + g, ${key.api_key_id}, date_trunc('month', now()), st,
           t, case when st = 'pending' then null else t end,
           case when st = 'identified' then case when g % 7 = 0 then 'individual' else 'company' end end,
           case when st = 'identified' then 'business' end, 'test', 0.8, 'US',
           case when st = 'identified' then 'scored' || g || '.example' end, case when st = 'identified' then 'Scored ' || g end,
           case when st = 'identified' and g % 7 = 0 then 'https://linkedin.com/in/p' || g end,
           case when st = 'identified' and g % 7 = 0 then 'Person ' || g end
    from generate_series(1, 120) g,
         lateral (select case when g % 11 = 0 then 'failed' when g % 13 = 0 then 'pending' else 'identified' end as st,
                         date_trunc('second', now()) - make_interval(mins => (g * 5) % 9) as t) x`;
  await env.db`
    with p as (insert into products (account_id, name) values (${accountId}, 'Product') returning id)
    insert into icps (account_id, product_id, name, description, engine, qualify_threshold, workflow_status, review_status)
    select ${accountId}, p.id, x.name, 'Buyers', 'caller', 60, x.status, 'approved'
    from p, (values ('One', 'active'), ('Two', 'active'), ('Paused', 'paused')) x (name, status)`;
  await env.db`
    insert into icp_scores (identification_id, icp_id, score, qualified, ai_summary, website_id, listed_at)
    select i.id, p.id, sc.score, sc.score >= p.qualify_threshold, 'test', i.website_id, i.created_at
    from identifications i cross join icps p
    cross join lateral (select (abs(hashtext(i.id::text || p.name)) % 101)::smallint as score) sc
    where i.website_id = ${key.website_id} and i.status = 'identified' and p.account_id = ${accountId}
      and (abs(hashtext(i.id::text || p.name || 'scored')) % 5) <> 0`;
});
afterAll(() => env.close());

describe('identification-list pages', () => {
  it('pages through every filter exactly as the whole list sorted would, qualified by active ICPs only', async () => {
    const failures: string[] = [];
    const filters = [
      {},
      { qualified: true },
      { qualified: false },
      { status: 'identified', qualified: true },
      { type: 'individual', qualified: true },
      { type: 'company', qualified: false },
      { status: 'pending', qualified: true },
      { type: 'individual' },
      { status: 'pending' },
    ];
    for (const f of filters) {
      for (const [limit, offset] of [
        [100, 0],
        [7, 0],
        [7, 7],
        [7, 21],
        [50, 40],
      ] as const) {
        const query: Record<string, string> = { limit: String(limit), offset: String(offset) };
        for (const [k, v] of Object.entries(f)) query[k] = String(v);
        const got = (await list(query)).map((i) => i.id);
        const want = await expectedIds({ ...f, limit, offset });
        if (JSON.stringify(got) !== JSON.stringify(want))
          failures.push(`${JSON.stringify(query)}: ${got.length} rows ≠ ${want.length} expected, or another order`);
      }
    }
    expect(failures).toEqual([]);
    // The filters select something, or the comparison above proves little.
    expect((await list({ qualified: 'true' })).length).toBeGreaterThan(10);
    expect((await list({ qualified: 'false' })).length).toBeGreaterThan(10);
  });

  it('shows the active ICPs’ scores of each row, highest first, and never a paused one’s', async () => {
    const rows = await list({ qualified: 'true', limit: '20' });
    for (const row of rows) {
      const scores = row.icp_scores as Array<{ icp_name: string; score: number; qualified: boolean }>;
      expect(scores.some((s) => s.qualified)).toBe(true);
      expect(scores.map((s) => s.icp_name)).not.toContain('Paused');
      expect(scores.map((s) => s.score)).toEqual([...scores.map((s) => s.score)].sort((a, b) => b - a));
    }
  });
});
