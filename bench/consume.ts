import os from 'node:os';
import {
  consumeIdentification,
  createChildKey,
  createCoreDeps,
  createKeyring,
  createMemoryRateLimiter,
  createPartner,
  silentLogger,
} from '@sightline/core';
import { createNodeWebhookTransport } from '@sightline/host';
import { openBenchDatabase } from './database.ts';
import { benchDuration } from './lib.ts';

/**
 * `npm run bench -- consume`: N concurrent consumers using IDs of one child, beside a raw
 * single-row `UPDATE … SET n = n + 1` loop with the same concurrency on the same database in the same
 * run. Both contend on one hot row, so the ratio shows what the ledger (pool draw, ledger row,
 * suspension check, one SQL function) costs on top of the bare row update. Ends with an exact
 * accounting check.
 */
const CONSUMERS = Number(process.env.BENCH_CONSUMERS ?? 32);

/** Runs `op` from `workers` concurrent loops for `seconds`; returns completed operations. */
async function loop(workers: number, seconds: number, op: () => Promise<unknown>): Promise<{ ops: number; ms: number }> {
  const deadline = Date.now() + seconds * 1000;
  let ops = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (Date.now() < deadline) {
        await op();
        ops++;
      }
    }),
  );
  return { ops, ms: performance.now() - started };
}

export async function run(): Promise<void> {
  const seconds = benchDuration();
  const { db, kind, drop } = await openBenchDatabase(CONSUMERS);
  const webhooks = createNodeWebhookTransport({ allowPrivate: false });
  let drain: () => Promise<void> = async () => {};
  try {
    const deps = createCoreDeps({
      db,
      keyring: await createKeyring('bench-secret-bench-secret-bench-secret!'),
      webhooks,
      log: silentLogger,
      rateLimiter: createMemoryRateLimiter({ limit: 1e9, windowSeconds: 60 }),
    });
    drain = () => deps.runner.drain();
    const big = 100_000_000;
    const partner = await createPartner({ ctx: deps, input: { name: 'Bench partner', quota: big } });
    const [caller] = await db<{ id: string; account_id: string }>`select id, account_id from api_keys where id = ${partner.api_key_id}`;
    if (!caller) throw new Error('partner key missing');
    const child = await createChildKey({
      ctx: {
        ...deps,
        caller: {
          kind: 'partner',
          apiKeyId: caller.id,
          accountId: caller.account_id,
          status: 'active',
          isPartner: true,
          isPartnerMaster: true,
          parentApiKeyId: null,
        },
      },
      input: { name: 'Bench child', domain: 'bench-child.example.com', monthly_id_quota: big },
    });
    const childId = child.child.api_key_id;
    await db`create table bench_counter (id int primary key, n bigint not null)`;
    await db`insert into bench_counter values (1, 0)`;

    const consume = async () => {
      const r = await consumeIdentification({ ctx: deps, input: { apiKeyId: childId } });
      if (r.outcome !== 'consumed') throw new Error(`unexpected outcome ${r.outcome}`);
    };
    const rawUpdate = () => db`update bench_counter set n = n + 1 where id = 1`;

    // Warm-up both paths (connections, plans, caches); discarded from the figures and the accounting.
    await loop(CONSUMERS, 2, rawUpdate);
    await loop(CONSUMERS, 2, consume);
    const [warm] = await db<{ used: number }>`select ids_used_this_period as used from child_subscriptions where api_key_id = ${childId}`;
    const warmUsed = warm?.used ?? 0;

    // Alternate so drift in the machine's state (autovacuum, page cache) hits both alike.
    const raw1 = await loop(CONSUMERS, seconds / 2, rawUpdate);
    const ours1 = await loop(CONSUMERS, seconds / 2, consume);
    const raw2 = await loop(CONSUMERS, seconds / 2, rawUpdate);
    const ours2 = await loop(CONSUMERS, seconds / 2, consume);
    const rawRate = ((raw1.ops + raw2.ops) / (raw1.ms + raw2.ms)) * 1000;
    const oursRate = ((ours1.ops + ours2.ops) / (ours1.ms + ours2.ms)) * 1000;

    // Exact accounting: every success is one ledger row, one child ID and one pool ID.
    const [acct] = await db<{ used: number; pool_used: number; ledger: number; topup: number }>`
      select s.ids_used_this_period as used, p.ids_used_this_period as pool_used, s.topup_balance as topup,
             (select count(*)::int from id_ledger where child_api_key_id = ${childId}) as ledger
      from child_subscriptions s, pools p
      where s.api_key_id = ${childId} and p.account_id = ${partner.account_id}`;
    const measured = ours1.ops + ours2.ops;
    const exact = acct !== undefined && acct.used === warmUsed + measured && acct.ledger === acct.used && acct.pool_used === acct.used;

    const ratio = oursRate / rawRate;
    const lines = [
      `consume bench — ${kind}, node ${process.version}, ${os.cpus().length} cores, ${CONSUMERS} concurrent consumers, ${seconds}s per path`,
      '',
      `  raw single-row UPDATE loop   ${rawRate.toFixed(0).padStart(8)} ops/s`,
      `  consumeIdentification        ${oursRate.toFixed(0).padStart(8)} consumes/s`,
      `  ratio                        ${(ratio * 100).toFixed(1).padStart(7)}%   (target ≥ 50%: ${ratio >= 0.5 ? 'PASS' : 'FAIL'})`,
      '',
      `  accounting: ${measured} measured + ${warmUsed} warm-up consumes; child used ${acct?.used}, pool used ${acct?.pool_used}, ledger rows ${acct?.ledger} → ${exact ? 'EXACT' : 'MISMATCH'}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    if (!exact) process.exitCode = 1;
  } finally {
    await drain();
    await webhooks.close();
    await drop();
  }
}
