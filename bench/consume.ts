import os from 'node:os';
import {
  type ConsumeOutcome,
  configureAutoReload,
  consumeIdentification,
  createChildKey,
  createMemoryRateLimiter,
  createPartner,
  creditTopup,
  type PartnerCtx,
  updateChild,
} from '@sightline/core';
import { openBenchService } from './database.ts';
import { benchDuration, figure, printFigures, setting, verdict } from './lib.ts';

/**
 * `npm run bench -- consume`: N concurrent consumers using IDs of one child, beside a raw
 * single-row `UPDATE … SET n = n + 1` loop with the same concurrency on the same database in the same
 * run, alternated (raw, ours, raw, ours) so drift in the machine hits both alike. Both contend on one
 * hot row, so the ratio shows what the ledger costs on top of the bare row update.
 *
 * The measured path is the whole of production's, not only its common case: the child is given a
 * few IDs at a time, so it keeps running out (the consumption that uses its last ID suspends it and
 * emits child.suspended; the identifications after it are refused, and counted apart from the
 * successes, which alone make the rate). The partner answers each
 * suspension the two ways the spec offers, in turn: a quota increase (partner-update-child: the IDs
 * draw on the pool; child.updated + child.reactivated) and a top-up purchase (credit-topup: the
 * child's own IDs; child.topup_changed + child.reactivated, then the throttled consumption event).
 * The pool has a small quota and auto-reload (threshold POOL_THRESHOLD, POOL_RELOAD IDs per charge,
 * the built-in processor): consumption claims the reloads, the background charges and credits them.
 *
 * Counted in the database at the end, and exact or the bench fails: one ledger row per success,
 * child quota rows = child usage = pool quota + pool top-up draws, top-up rows = top-ups credited −
 * balances, one child.suspended per transition and one child.reactivated per refill.
 */
const CONSUMERS = setting('BENCH_CONSUMERS', 32);
/**
 * IDs per refill of the child (the run goes through one suspension every so many identifications).
 * Unset, it is sized from the warm-up's rate (while not suspended) for about two suspensions per
 * measured half, so the path is the same on a fast machine and a slow one.
 */
const FIXED_REFILL = process.env.BENCH_CONSUME_REFILL ? setting('BENCH_CONSUME_REFILL', 1000) : undefined;
const WARMUP_REFILL = 200;
const SUSPENSIONS_PER_HALF = 2;
const POOL_QUOTA = setting('BENCH_CONSUME_POOL_QUOTA', 1000, 0);
const POOL_THRESHOLD = setting('BENCH_CONSUME_POOL_THRESHOLD', 1000);
const POOL_RELOAD = setting('BENCH_CONSUME_POOL_RELOAD', 2500);
const WARMUP = 2;
/** The consumption event of a top-up is throttled per 5 minutes; the event check assumes one window. */
const THROTTLE_SECONDS = 300;

interface Tally {
  consumed: number;
  refused: Partial<Record<ConsumeOutcome, number>>;
}

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
  if (2 * WARMUP + seconds * 2 >= THROTTLE_SECONDS) throw new Error('BENCH_DURATION too long for the consumption-event check (one 5-minute window)');
  const { db, kind, deps, close } = await openBenchService(CONSUMERS, {
    allowPrivateWebhooks: false,
    rateLimiter: createMemoryRateLimiter({ limit: 1e9, windowSeconds: 60 }),
  });
  try {
    const drain = () => deps.runner.drain();
    const partner = await createPartner({ ctx: deps, input: { name: 'Bench partner', quota: POOL_QUOTA, perIdPence: 2.5 } });
    await configureAutoReload({
      ctx: deps,
      input: {
        accountId: partner.account_id,
        enabled: true,
        thresholdIds: POOL_THRESHOLD,
        topupAmountIds: POOL_RELOAD,
        paymentMethodId: 'pm_bench_card',
      },
    });
    const [caller] = await db<{ id: string; account_id: string }>`select id, account_id from api_keys where id = ${partner.api_key_id}`;
    if (!caller) throw new Error('partner key missing');
    const partnerCtx: PartnerCtx = {
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
    };
    const child = await createChildKey({
      ctx: partnerCtx,
      input: { name: 'Bench child', domain: 'bench-child.example.com', monthly_id_quota: FIXED_REFILL ?? WARMUP_REFILL },
    });
    const childId = child.child.api_key_id;
    await db`create table bench_counter (id int primary key, n bigint not null)`;
    await db`insert into bench_counter values (1, 0)`;

    // The partner's answer to child.suspended: one refill per suspension, alternately a quota
    // increase and a top-up purchase. `epoch` counts finished refills; a refusal seen by a consume
    // that started before the last refill finished is about the old suspension, already answered.
    let refillIds = FIXED_REFILL ?? WARMUP_REFILL;
    let quota = refillIds;
    let raises = 0;
    let purchases = 0;
    let epoch = 0;
    let refilling: Promise<void> | undefined;
    /** How long each refill took, from the refusal that asked for it: the child's time suspended. */
    const refillMs: number[] = [];
    const refill = async () => {
      if ((raises + purchases) % 2 === 0) {
        quota += refillIds;
        await updateChild({ ctx: partnerCtx, input: { child_api_key_id: childId, monthly_id_quota: quota } });
        raises++;
      } else {
        const { credited } = await creditTopup({
          ctx: deps,
          input: { paymentRef: `bench-purchase-${purchases}`, childApiKeyId: childId, amount: refillIds, source: 'purchase' },
        });
        if (!credited) throw new Error('a bench purchase was not credited');
        purchases++;
      }
    };

    const tally: Tally = { consumed: 0, refused: {} };
    const consume = async () => {
      const seen = epoch;
      const r = await consumeIdentification({ ctx: deps, input: { apiKeyId: childId } });
      if (r.outcome === 'consumed') {
        tally.consumed++;
        return;
      }
      tally.refused[r.outcome] = (tally.refused[r.outcome] ?? 0) + 1;
      if (r.outcome === 'suspended' && seen === epoch && !refilling) {
        const started = performance.now();
        refilling = refill().finally(() => {
          refillMs.push(performance.now() - started);
          epoch++;
          refilling = undefined;
        });
      } else if (r.outcome !== 'suspended' && r.outcome !== 'pool_exhausted') {
        throw new Error(`unexpected outcome ${r.outcome}`);
      }
    };
    const oursLoop = async (s: number) => {
      const before = tally.consumed;
      const l = await loop(CONSUMERS, s, consume);
      // A refill still in flight belongs to this path's time, not to the next raw run's.
      await refilling;
      return { ...l, consumed: tally.consumed - before };
    };
    const rawUpdate = () => db`update bench_counter set n = n + 1 where id = 1`;

    // Warm-up both paths (connections, plans, caches); discarded from the rates, not from the accounting.
    await loop(CONSUMERS, WARMUP, rawUpdate);
    await oursLoop(WARMUP);
    const warm = { consumed: tally.consumed, refused: Object.values(tally.refused).reduce((a, b) => a + b, 0), raises, purchases };
    const warmActiveSeconds = Math.max(0.1, WARMUP - refillMs.reduce((a, b) => a + b, 0) / 1000);
    refillIds = FIXED_REFILL ?? Math.max(100, Math.round(((warm.consumed / warmActiveSeconds) * (seconds / 2)) / SUSPENSIONS_PER_HALF));

    const raw1 = await loop(CONSUMERS, seconds / 2, rawUpdate);
    const ours1 = await oursLoop(seconds / 2);
    const raw2 = await loop(CONSUMERS, seconds / 2, rawUpdate);
    const ours2 = await oursLoop(seconds / 2);
    const rawRate = ((raw1.ops + raw2.ops) / (raw1.ms + raw2.ms)) * 1000;
    const oursMs = ours1.ms + ours2.ms;
    const oursRate = ((ours1.consumed + ours2.consumed) / oursMs) * 1000;
    const refusedMeasured = ours1.ops + ours2.ops - ours1.consumed - ours2.consumed;
    await drain(); // auto-reload charges claimed by the last consumptions

    const checks = await accounting(db, { childId, poolAccountId: partner.account_id, consumed: tally.consumed, quota, raises, purchases });
    // The measured path must be the whole one: suspensions answered both ways while it was timed.
    checks.push({
      what: 'measured runs went through suspensions refilled both ways',
      got: `${raises - warm.raises} increases, ${purchases - warm.purchases} purchases`,
      want: 'at least one of each',
      ok: raises > warm.raises && purchases > warm.purchases,
    });
    const mismatches = checks.filter((c) => !c.ok);

    const ratio = oursRate / rawRate;
    const refusedBy = Object.entries(tally.refused)
      .map(([o, n]) => `${o} ${n}`)
      .join(', ');
    const lines = [
      `consume bench — ${kind}, node ${process.version}, ${os.cpus().length} cores, ${CONSUMERS} concurrent consumers, ${seconds}s per path`,
      `  child refilled by ${refillIds} IDs per suspension (quota increase and top-up purchase in turn); pool quota ${POOL_QUOTA}, auto-reload ${POOL_RELOAD} below ${POOL_THRESHOLD}`,
      '',
      `  raw single-row UPDATE loop   ${rawRate.toFixed(0).padStart(8)} ops/s`,
      `  consumeIdentification        ${oursRate.toFixed(0).padStart(8)} consumes/s   (+ ${((refusedMeasured / oursMs) * 1000).toFixed(0)} refusals/s while suspended, not counted)`,
      `  ratio                        ${(ratio * 100).toFixed(1).padStart(7)}%   (target ≥ 55%: ${verdict(ratio >= 0.55)})`,
      '',
      `  measured: ${ours1.consumed + ours2.consumed} consumed, ${refusedMeasured} refused; warm-up: ${warm.consumed} consumed, ${warm.refused} refused`,
      `  whole run: ${tally.consumed} consumed, refused ${refusedBy || 'none'}; ${raises} quota increases, ${purchases} purchases`,
      `  refills took ${refillMs.length ? `${(refillMs.reduce((a, b) => a + b, 0) / refillMs.length).toFixed(1)} ms on average, ${Math.max(...refillMs).toFixed(1)} ms at most` : '—'} (the child is suspended meanwhile)`,
      '',
      '  accounting (in the database):',
      ...checks.map((c) => `    ${c.ok ? 'ok      ' : 'MISMATCH'} ${c.what}: ${c.got}${c.ok ? '' : ` (expected ${c.want})`}`),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    printFigures([
      figure('consume', `consumes/s (suspending, refilled, auto-reloaded) vs raw single-row UPDATE, ${CONSUMERS} consumers`, {
        ours: Math.round(oursRate),
        baseline: Math.round(rawRate),
        goal: 'ratio >= 0.55',
        unit: 'ops/s',
      }),
      figure('consume', 'accounting mismatches (ledger, balances, top-ups, events)', { ours: mismatches.length, goal: 'ours == 0', unit: 'checks' }),
      figure('consume', 'suspensions answered by a refill during the run', { ours: raises + purchases, unit: 'refills' }),
    ]);
    if (mismatches.length) process.exitCode = 1;
  } finally {
    await close();
  }
}

interface Check {
  what: string;
  got: number | string;
  want: number | string;
  ok: boolean;
}

/** The exact accounting, from the rows the ledger wrote; every figure is compared with what the bench did. */
async function accounting(
  db: Awaited<ReturnType<typeof openBenchService>>['db'],
  run: { childId: string; poolAccountId: string; consumed: number; quota: number; raises: number; purchases: number },
): Promise<Check[]> {
  const [s] = await db<{
    child_used: number;
    child_quota: number;
    child_topup: number;
    status: string;
    pool_id: string;
    pool_used: number;
    pool_quota: number;
    pool_topup: number;
    pool_overage: number;
    reload_in_flight: boolean;
    declines: number;
  }>`
    select s.ids_used_this_period as child_used, s.monthly_id_quota as child_quota, s.topup_balance as child_topup, k.status,
           p.id as pool_id, p.ids_used_this_period as pool_used, p.monthly_id_quota as pool_quota, p.topup_balance as pool_topup,
           p.overage_ids_this_period as pool_overage, p.reload_started_at is not null as reload_in_flight, p.consecutive_declines as declines
    from child_subscriptions s join api_keys k on k.id = s.api_key_id, pools p
    where s.api_key_id = ${run.childId} and p.account_id = ${run.poolAccountId}`;
  if (!s) throw new Error('bench child or pool missing');
  const [l] = await db<{
    rows: number;
    quota_rows: number;
    topup_rows: number;
    pool_quota_rows: number;
    pool_topup_rows: number;
    other_pool: number;
  }>`
    select count(*)::int as rows,
           count(*) filter (where child_source = 'quota')::int as quota_rows,
           count(*) filter (where child_source = 'topup' and pool_source is null and pool_id is null)::int as topup_rows,
           count(*) filter (where child_source = 'quota' and pool_source = 'quota')::int as pool_quota_rows,
           count(*) filter (where child_source = 'quota' and pool_source = 'topup')::int as pool_topup_rows,
           count(*) filter (where child_source = 'quota' and pool_id is distinct from ${s.pool_id})::int as other_pool
    from id_ledger where child_api_key_id = ${run.childId}`;
  const [t] = await db<{ purchased: number; purchases: number; reloaded: number; reloads: number; failed: number }>`
    select coalesce(sum(amount_ids) filter (where child_api_key_id = ${run.childId} and source = 'purchase'), 0)::int as purchased,
           count(*) filter (where child_api_key_id = ${run.childId} and source = 'purchase')::int as purchases,
           coalesce(sum(amount_ids) filter (where pool_id = ${s.pool_id} and source = 'auto_reload' and status = 'completed'), 0)::int as reloaded,
           count(*) filter (where pool_id = ${s.pool_id} and source = 'auto_reload' and status = 'completed')::int as reloads,
           count(*) filter (where status <> 'completed')::int as failed
    from topups where child_api_key_id = ${run.childId} or pool_id = ${s.pool_id}`;
  const events = await db<{ event: string; reason: string | null; n: number; consistent: number }>`
    select event, body::jsonb -> 'data' ->> 'reason' as reason, count(*)::int as n,
           count(*) filter (where event <> 'child.suspended'
                               or ((body::jsonb -> 'data' ->> 'ids_used_this_period')::int = (body::jsonb -> 'data' ->> 'monthly_id_quota')::int
                                   and (body::jsonb -> 'data' ->> 'topup_balance')::int = 0))::int as consistent
    from events where child_api_key_id = ${run.childId} group by 1, 2`;
  if (!l || !t) throw new Error('accounting queries returned nothing');
  const ev = (event: string, reason?: string) =>
    events.filter((e) => e.event === event && (reason === undefined || e.reason === reason)).reduce((n, e) => n + e.n, 0);
  const refills = run.raises + run.purchases;
  const suspendedNow = s.status === 'suspended' ? 1 : 0;
  const check = (what: string, got: number | string, want: number | string): Check => ({ what, got, want, ok: got === want });
  return [
    check('ledger rows = successful consumes', l.rows, run.consumed),
    check('ledger rows = quota rows + top-up rows', l.quota_rows + l.topup_rows, l.rows),
    check('child quota rows = child ids_used_this_period', l.quota_rows, s.child_used),
    check('child quota = initial + increases', s.child_quota, run.quota),
    check('child top-up rows = purchases credited − child top-up balance', l.topup_rows, t.purchased - s.child_topup),
    check('purchases credited = purchases made', t.purchases, run.purchases),
    check('pool quota draws = pool ids_used_this_period', l.pool_quota_rows, s.pool_used),
    check('pool top-up draws = auto-reloads credited − pool top-up balance', l.pool_topup_rows, t.reloaded - s.pool_topup),
    check('child quota rows = pool quota draws + pool top-up draws', l.quota_rows, l.pool_quota_rows + l.pool_topup_rows),
    check('quota rows drawn on another pool', l.other_pool, 0),
    check('auto-reloads credited × amount', t.reloaded, t.reloads * POOL_RELOAD),
    check('auto-reloads charged during the run > 0', t.reloads > 0 ? 'yes' : 'no', 'yes'),
    check('pool overage (prepaid)', s.pool_overage, 0),
    check('failed top-ups, declines, reloads left in flight', t.failed + s.declines + (s.reload_in_flight ? 1 : 0), 0),
    check('child.suspended = refills + (suspended at the end)', ev('child.suspended'), refills + suspendedNow),
    check(
      'child.suspended with usage = quota and top-up 0',
      events.filter((e) => e.event === 'child.suspended').reduce((n, e) => n + e.consistent, 0),
      ev('child.suspended'),
    ),
    check('child.reactivated (quota_increased) = quota increases', ev('child.reactivated', 'quota_increased'), run.raises),
    check('child.reactivated (topup_purchased) = purchases', ev('child.reactivated', 'topup_purchased'), run.purchases),
    check('child.reactivated, other reasons', ev('child.reactivated') - run.raises - run.purchases, 0),
    check('child.updated = quota increases', ev('child.updated'), run.raises),
    check('child.topup_changed (purchase) = purchases', ev('child.topup_changed', 'purchase'), run.purchases),
    check('child.topup_changed (consumption), one per 5 minutes', ev('child.topup_changed', 'consumption'), l.topup_rows > 0 ? 1 : 0),
    check(
      'other child events',
      events.reduce((n, e) => n + e.n, 0) -
        ev('child.created') -
        ev('child.suspended') -
        ev('child.reactivated') -
        ev('child.updated') -
        ev('child.topup_changed'),
      0,
    ),
  ];
}
