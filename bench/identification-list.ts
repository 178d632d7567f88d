import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { createPartner } from '@sightline/core';
import { createTestEnv } from '../tests/support/app.ts';
import { createChildVia } from '../tests/support/seed.ts';
import {
  type CountedRequest,
  countedFailures,
  countedTable,
  driveCounted,
  figure,
  formatTable,
  machineLine,
  printFigures,
  serveForBench,
  setting,
  verdict,
  WARMUP_SECONDS,
} from './lib.ts';
import { seed } from './visitors.ts';

/**
 * `npm run bench -- identification-list` (real Postgres only: DATABASE_URL):
 *
 * One child's website with BENCH_ROWS (1,000,000) identified identifications and their visitors,
 * seeded in bulk as `npm run bench -- visitors` seeds them, and the account's three ICPs: two active
 * (qualify at a score of 90) and one paused (at 50, whose scores must not count), each having scored
 * every identification (a score from a hash of the identification: about one in ten qualifies for
 * each active ICP, one in five for either). Then `GET /identification-list?website_id=…&qualified=true`
 * with the child's key on the production build of the host in its own process, at 8 connections
 * (closed loop, worker thread), cycling through the first three pages (offset 0, 100, 200).
 * Target: p99 ≤ 50 ms.
 *
 * Settings: BENCH_SECONDS (15), BENCH_ROWS (1,000,000), BENCH_POOL (10).
 */
const CONNECTIONS = 8;
const MAX_P99_MS = 50;

export async function run(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('bench identification-list needs real Postgres: set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test)');
  const seconds = setting('BENCH_SECONDS', 15);
  const rows = setting('BENCH_ROWS', 1_000_000, 20);
  const pool = setting('BENCH_POOL', 10);

  const env = await createTestEnv({ pool: 4 });
  try {
    const partner = await createPartner({ ctx: env.deps, input: { name: 'Bench Partner', quota: 1_000_000 } });
    const suffix = randomBytes(4).toString('hex');
    const child = await createChildVia(env, partner.key, { name: 'Scored', domain: `scored-${suffix}.example.com`, monthly_id_quota: 1000 });
    const s = { websiteId: child.website.id, apiKeyId: child.child.api_key_id };
    const [acct] = await env.db<{ account_id: string }>`select account_id from api_keys where id = ${s.apiKeyId}`;
    const accountId = acct?.account_id ?? '';

    const t0 = performance.now();
    await seed(env, s, 1, rows, Math.floor(rows / 10));
    // The account's ICPs, as an approved generation leaves them, and every identification scored.
    await env.db`
      with p as (
        insert into products (account_id, name, description) values (${accountId}, 'Bench product', 'What the bench sells')
        returning id
      )
      insert into icps (account_id, product_id, name, description, engine, qualify_threshold, workflow_status, review_status)
      select ${accountId}, p.id, x.name, 'Buyers of the bench product', 'caller', x.threshold, x.status, 'approved'
      from p, (values ('Enterprise', 90, 'active'), ('Mid-market', 90, 'active'), ('Retired', 50, 'paused')) x (name, threshold, status)`;
    await env.db`drop index icp_scores_by_icp`;
    await env.db.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      await tx`
        insert into icp_scores (identification_id, icp_id, score, qualified, ai_summary, scored_at, website_id, listed_at)
        select i.id, p.id, sc.score, sc.score >= p.qualify_threshold, 'Scored by the bench', i.identified_at, i.website_id, i.created_at
        from identifications i cross join icps p
        cross join lateral (select (abs(hashtextextended(i.id::text || p.name, 0)) % 101)::smallint as score) sc
        where i.website_id = ${s.websiteId} and p.account_id = ${accountId}`;
    });
    await env.db`create index icp_scores_by_icp on icp_scores (icp_id)`;
    await env.db`vacuum analyze icp_scores`;
    await env.db`vacuum analyze identifications`;
    await env.db`vacuum analyze icps`;
    await env.db`checkpoint`;
    const seedSeconds = (performance.now() - t0) / 1000;
    const [counts] = await env.db<{ i: number; q: number }>`
      select (select count(*)::int from identifications where website_id = ${s.websiteId}) as i,
             (select count(*)::int from identifications i where i.website_id = ${s.websiteId} and exists (
                select 1 from icp_scores x join icps p on p.id = x.icp_id
                where x.identification_id = i.id and x.qualified and p.workflow_status = 'active')) as q`;

    const requests: CountedRequest[] = [0, 100, 200].map((offset) => ({
      path: `/identification-list?${new URLSearchParams({ website_id: s.websiteId, qualified: 'true', offset: String(offset) })}`,
      headers: { 'x-access-key': child.child.key },
    }));
    const server = await serveForBench(env, { pool, ipData: false });
    try {
      // Each page answers 100 qualified identifications.
      for (const r of requests) {
        const res = await fetch(`${server.url}${r.path}`, { headers: r.headers });
        const body = (await res.json()) as { identifications?: unknown[] };
        if (res.status !== 200 || body.identifications?.length !== 100) {
          throw new Error(`identification-list probe returned ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
        }
      }
      process.stdout.write(
        [
          'bench identification-list',
          `  ${machineLine()}`,
          `  server: ${server.where}`,
          `  seeded ${counts?.i} identifications (${counts?.q} qualified by an active ICP) with their visitors and 3 ICP scores each in ${seedSeconds.toFixed(1)} s`,
          `  load: ${CONNECTIONS} keep-alive connections, closed loop; qualified=true, offsets 0 / 100 / 200 in turn`,
          '',
        ].join('\n'),
      );
      await driveCounted({ name: 'warm-up', origin: server.url, method: 'GET', requests, connections: CONNECTIONS, seconds: WARMUP_SECONDS });
      const listed = await driveCounted({
        name: `identification-list qualified=true @ ${rows}`,
        origin: server.url,
        method: 'GET',
        requests,
        connections: CONNECTIONS,
        seconds,
      });
      const alone = await driveCounted({
        name: `identification-list qualified=true @ ${rows}, 1 connection`,
        origin: server.url,
        method: 'GET',
        requests,
        connections: 1,
        seconds,
      });
      const rss = (await server.rss()) ?? Number.NaN;
      process.stdout.write(`${countedTable([listed, alone])}\n`);
      process.stdout.write(
        `${formatTable(
          ['check', 'measured', 'target', 'result'],
          [
            [
              [
                `identification-list qualified=true p99 @ ${rows}, ${CONNECTIONS} connections`,
                `${listed.p99.toFixed(2)} ms`,
                `≤ ${MAX_P99_MS} ms`,
                verdict(listed.p99 <= MAX_P99_MS),
              ],
              ['  p50', `${listed.p50.toFixed(2)} ms`, '', ''],
              ['  one connection: p50 / p99 (service time)', `${alone.p50.toFixed(2)} / ${alone.p99.toFixed(2)} ms`, '', ''],
            ],
          ],
        )}\n`,
      );
      process.stdout.write(
        `load average at the end: ${os
          .loadavg()
          .map((l) => l.toFixed(2))
          .join(', ')} (1, 5, 15 min; 2 CPUs)\n`,
      );
      const broken = [listed, alone].flatMap((r) => {
        const why = countedFailures(r, 200);
        return why ? [`${r.name}: ${why}`] : [];
      });
      if (broken.length) throw new Error(`unsuccessful responses: ${broken.join(' | ')}`);
      printFigures([
        figure('identification-list', `identification-list qualified=true p99 @ ${rows} identifications, ${CONNECTIONS} connections`, {
          ours: listed.p99,
          goal: `ours <= ${MAX_P99_MS}`,
          unit: 'ms',
        }),
        figure('identification-list', `identification-list qualified=true p50 @ ${rows} identifications, 1 connection`, {
          ours: alone.p50,
          unit: 'ms',
        }),
        figure('identification-list', 'server RSS after load (npm run serve, Postgres)', { ours: rss, unit: 'MB' }),
      ]);
    } finally {
      await server.close();
    }
  } finally {
    await env.close();
  }
}
