import { readFileSync } from 'node:fs';
import { type Database, rollOverDuePeriods, type Sql } from '@sightline/core';
import { openBenchService, openExplainingSession } from './database.ts';
import { figure, formatTable, machineLine, printFigures, setting, verdict } from './lib.ts';

/**
 * `npm run bench -- rollover`: the hourly period rollover (rollOverDuePeriods, the verb the
 * sweep-period-rollover function and the Node host's scheduler call) over a big child_subscriptions.
 *
 * Seeded with generate_series, the way sl_create_child leaves rows (a phantom account, a key under
 * the partner's master key, a subscription), spread over PARTNERS partners with a long tail (a few
 * partners hold most children; 9 in 10 partners have a webhook). Children come in every state the
 * rollover treats differently: a queued quota decrease, suspended for an exhausted quota (lifted by
 * the rollover), suspended by the partner (kept), with and without top-up. Due children are
 * interleaved with children that are not due, so a batch's rows are scattered over the heap.
 *
 * Two databases: "small" holds N children, "large" 10 × N (N = BENCH_ROLLOVER_CHILDREN, default
 * 100,000). Each holds two probe sets, one child in PROBE_EVERY each, due at two instants in the past
 * (t0 − 4 days, t0 − 2 days); the large one also holds N children due at t0 + 1 day, the big rollover.
 * 1. Cost per batch: each probe set is rolled by the verb with its instant as `now`, in the order
 *    small, large, large, small, so load from elsewhere on the machine weighs on both sizes alike.
 *    ms per batch = sweep time / batches of 500 (the verb's default). Goal: flat, large / small ≤ 1.5.
 *    The probe sets are equally dense in both databases, so the one thing that differs between the
 *    two measurements is the size of the tables (and their indexes) around the due rows. (Until
 *    2026-11-24 both probe sets held N/10 children, so the large database's were ten times sparser: a
 *    batch there touched about five times as many heap pages, and after a checkpoint wrote that many
 *    more full-page images, whatever the table's size; its ratio swung between 1.2 and 1.7.) Both
 *    databases are checkpointed after seeding, so neither side's probes write out the other's seed.
 * 2. The big rollover: N children and a tenth of the pools, due at t0 + 1 day, swept by the verb with
 *    that instant as `now` until nothing is due. Goal ≤ 20 s.
 * 3. A sweep with nothing due, right after it (no vacuum in between, so the rolled rows' old index
 *    entries are still in the range the sweep looks at): median of NOTHING_RUNS. Goal ≤ 2 ms.
 *    Baseline: the same sweep with migration 0020's indexes dropped (how 0002 found due rows).
 * Every sweep is checked in the database: each due child rolled exactly once (one
 * child.period_rolled, with the right previous and new end), new period = [the sweep's now, + 30
 * days), usage 0, a queued decrease applied (and announced once in child.updated), an exhausted
 * suspension lifted (child.reactivated), a manual one kept, nothing else rolled; the due pools reset
 * and invoiced once. A wrong count fails the bench.
 *
 * Tables are vacuumed and analysed after the bulk seed, as autovacuum would after such an insert
 * (and so it does not start in the middle of a measurement). The verb is given `now` only because
 * the bench must put several sweeps' worth of due children in place before any of them runs; the
 * scheduled function's call (no `now`) is the nothing-due sweep at the present.
 */
const N = setting('BENCH_ROLLOVER_CHILDREN', 100_000, 1000);
const PARTNERS = Math.min(1000, Math.max(10, Math.floor(N / 100)));
/** rollOverDuePeriods' default batch (what the scheduled function uses). */
const BATCH = 500;
const NOTHING_RUNS = 101;
/** One child in PROBE_EVERY belongs to each probe set, in both databases: 5 rows in 100 due per sweep, scattered. */
const PROBE_EVERY = 20;
const SEED_CHUNK = 100_000;
const DAY_MS = 86_400_000;

interface Ctx {
  db: Sql;
  deps: Parameters<typeof rollOverDuePeriods>[0]['ctx'];
}

/** Partners, each with a master key and a pool; a tenth of the pools fall due in the big rollover, half of those on monthly invoice with overage. */
async function seedPartners(db: Sql, t0: Date): Promise<void> {
  await db`create table bench_partner (n int primary key, account_id uuid not null, master_id uuid not null)`;
  await db`
    with p as (select n, gen_random_uuid() as a, gen_random_uuid() as k from generate_series(0, ${PARTNERS - 1}::int) n),
    acc as (
      insert into accounts (id, name, is_partner, partner_webhook_url, partner_webhook_secret_sealed)
      select a, 'Rollover partner ' || n, true,
             case when n % 10 <> 9 then 'https://hooks.example.com/partner/' || n end,
             case when n % 10 <> 9 then 'sealed-placeholder' end
      from p),
    keys as (
      insert into api_keys (id, account_id, key_hash, key_prefix, is_partner_master, name)
      select k, a, encode(sha256(convert_to('partner ' || n, 'UTF8')), 'hex'), 'sl_live_p', true, 'Master ' || n from p),
    pools as (
      insert into pools (account_id, monthly_id_quota, pending_monthly_id_quota, ids_used_this_period, overage_ids_this_period,
                         pool_billing_mode, partner_per_id_pence, current_period_start, current_period_end)
      select a,
             case when n % 20 = 0 then 1000 else 10000000 end,
             case when n % 30 = 0 then 5000000 end,
             case when n % 20 = 0 then 1005 else (n * 13) % 1000 end,
             case when n % 20 = 0 then 5 else 0 end,
             case when n % 20 = 0 then 'invoice_monthly' else 'prepaid' end,
             case when n % 20 = 0 then 2 end,
             e - interval '30 days', e
      from (select p.*, case when n % 10 = 0 then ${t0}::timestamptz + interval '1 hour' + (n % 22) * interval '1 hour'
                             else ${t0}::timestamptz + interval '2 days' + (n % 30) * interval '1 day' end as e
            from p) pe)
    insert into bench_partner select n, a, k from p`;
}

/** The instants the bench sweeps at, from t0 (the database's clock when seeding starts). */
function instants(t0: Date) {
  const at = (days: number) => new Date(t0.getTime() + days * DAY_MS);
  return { probes: [at(-4), at(-2)] as const, main: at(1) };
}

/**
 * Children 1..total. Of every `probeEvery`, one is due at the first probe instant and one at the
 * second (a day's worth of ends before each); one in 10 is due at the big rollover's instant when
 * `main`; the rest are not due for 2 to 32 days.
 */
async function seedChildren(db: Database, t0: Date, total: number, probeEvery: number, main: boolean): Promise<void> {
  const { probes } = instants(t0);
  for (let lo = 1; lo <= total; lo += SEED_CHUNK) {
    const hi = Math.min(total, lo + SEED_CHUNK - 1);
    await db`
      with g as (
        select g, gen_random_uuid() as account_id, gen_random_uuid() as key_id,
               ((g::bigint * 2654435761) % 1000003) as h,
               ((g::bigint * 40503) % 65537)::float8 / 65537 as f2,
               50 + (g % 20) * 25 as q,
               case when g % ${probeEvery}::int = 0 then 'probe1'
                    when g % ${probeEvery}::int = ${probeEvery / 2}::int then 'probe2'
                    when ${main}::boolean and g % 10 = 3 then 'main'
                    else 'idle' end as cls
        from generate_series(${lo}::int, ${hi}::int) g),
      x as (
        -- st, the state, comes from a hash of g, independent of the class g falls in.
        select g.*, h % 10 as st, p.master_id,
               case cls when 'probe1' then ${probes[0]}::timestamptz - interval '1 minute' - (h::float8 / 1000003) * interval '1 day'
                        when 'probe2' then ${probes[1]}::timestamptz - interval '1 minute' - (h::float8 / 1000003) * interval '1 day'
                        when 'main' then ${t0}::timestamptz + interval '1 hour' + (h::float8 / 1000003) * interval '22 hours'
                        else ${t0}::timestamptz + interval '2 days' + (h::float8 / 1000003) * interval '30 days' end as period_end
        -- A long tail: partner n holds a share of children falling off as sqrt.
        from g join bench_partner p on p.n = least(${PARTNERS - 1}::int, floor(${PARTNERS}::int * f2 * f2)::int)),
      acc as (insert into accounts (id, name, is_phantom) select account_id, 'Child ' || g, true from x),
      keys as (
        insert into api_keys (id, account_id, key_hash, key_prefix, parent_api_key_id, name, brand_name, status, suspended_reason)
        select key_id, account_id, encode(sha256(convert_to('child ' || g, 'UTF8')), 'hex'), 'sl_live_c', master_id,
               'Child ' || g, 'Child ' || g,
               case when st in (1, 2) then 'suspended' else 'active' end,
               case st when 1 then 'quota_exhausted' when 2 then 'manual' end
        from x)
      insert into child_subscriptions (api_key_id, monthly_id_quota, pending_monthly_id_quota, ids_used_this_period, topup_balance,
                                       current_period_start, current_period_end)
      select key_id, q, case when st = 0 then q / 2 end,
             case when st = 1 then q else (g * 7) % (q + 1) end,
             case when st <> 1 and g % 7 = 3 then 10 else 0 end,
             -- Every start is before the first probe instant, so a sweep's new starts tell the rolled rows apart.
             least(period_end - interval '30 days', ${probes[0]}::timestamptz - interval '1 day'), period_end
      from x`;
  }
  for (const table of ['accounts', 'api_keys', 'child_subscriptions', 'pools']) await db.exec(`vacuum analyze ${table}`);
}

/** What every child due at `at` must look like after its rollover, recorded before the sweep. */
async function expectDue(db: Sql, phase: string, at: Date): Promise<number> {
  await db`
    insert into bench_expect (phase, sub_id, key_id, old_end, quota, topup, decreased, reactivates, status_after, reason_after)
    select ${phase}, s.id, s.api_key_id, s.current_period_end, coalesce(s.pending_monthly_id_quota, s.monthly_id_quota), s.topup_balance,
           coalesce(s.pending_monthly_id_quota, s.monthly_id_quota) <> s.monthly_id_quota,
           r.reactivates,
           case when r.reactivates then 'active' else k.status end,
           case when r.reactivates then null else k.suspended_reason end
    from child_subscriptions s join api_keys k on k.id = s.api_key_id,
         lateral (select k.status = 'suspended' and k.suspended_reason = 'quota_exhausted'
                         and (coalesce(s.pending_monthly_id_quota, s.monthly_id_quota) > 0 or s.topup_balance > 0) as reactivates) r
    where s.current_period_end <= ${at} and k.parent_api_key_id is not null`;
  const [c] = await db<{ n: number }>`select count(*)::int as n from bench_expect where phase = ${phase}`;
  return c?.n ?? 0;
}

interface Check {
  what: string;
  got: number;
  want: number;
}

/** The database's account of one sweep: every expected child rolled once, and nothing else. */
async function verify(db: Sql, label: string, phase: string, seqBefore: number, start: { lo: Date; hi: Date }, reported: number): Promise<Check[]> {
  const [st] = await db<{ expected: number; right: number; starts: number }>`
    select count(*)::int as expected,
           count(*) filter (where s.ids_used_this_period = 0 and s.monthly_id_quota = e.quota and s.pending_monthly_id_quota is null
                              and s.topup_balance = e.topup
                              and s.current_period_start between ${start.lo} and ${start.hi}
                              and s.current_period_end = s.current_period_start + interval '30 days'
                              and k.status = e.status_after and k.suspended_reason is not distinct from e.reason_after)::int as right,
           count(distinct s.current_period_start)::int as starts
    from bench_expect e join child_subscriptions s on s.id = e.sub_id join api_keys k on k.id = e.key_id
    where e.phase = ${phase}`;
  const [ev] = await db<{
    rolled: number;
    children: number;
    once: number;
    body_ok: number;
    updated: number;
    decreased: number;
    reactivated: number;
    reactivates: number;
  }>`
    with ev as (
      select child_api_key_id, event, count(*)::int as n from events
      where seq > ${seqBefore} and event in ('child.period_rolled', 'child.updated', 'child.reactivated') group by 1, 2),
    e as (select * from bench_expect where phase = ${phase})
    select (select coalesce(sum(n), 0) from ev where event = 'child.period_rolled')::int as rolled,
           (select count(*) from ev where event = 'child.period_rolled')::int as children,
           (select count(*) from e join ev on ev.child_api_key_id = e.key_id and ev.event = 'child.period_rolled' and ev.n = 1)::int as once,
           (select count(*) from events v join e on e.key_id = v.child_api_key_id join child_subscriptions s on s.id = e.sub_id
            where v.seq > ${seqBefore} and v.event = 'child.period_rolled'
              and v.body::jsonb -> 'data' ->> 'previous_period_end' = sl_iso(e.old_end)
              and v.body::jsonb -> 'data' ->> 'new_period_end' = sl_iso(s.current_period_end)
              and (v.body::jsonb -> 'data' ->> 'monthly_id_quota')::int = e.quota
              and (v.body::jsonb -> 'data' ->> 'ids_used_this_period')::int = 0)::int as body_ok,
           (select coalesce(sum(n), 0) from ev where event = 'child.updated')::int as updated,
           (select count(*) from e where decreased)::int as decreased,
           (select coalesce(sum(n), 0) from ev where event = 'child.reactivated')::int as reactivated,
           (select count(*) from e where reactivates)::int as reactivates`;
  const [moved] = await db<{ n: number }>`
    select count(*)::int as n from child_subscriptions where current_period_start between ${start.lo} and ${start.hi}`;
  const expected = st?.expected ?? -1;
  return [
    { what: `${label}: children the sweep reported`, got: reported, want: expected },
    { what: `${label}: due children in the new period, usage 0, quota and status right`, got: st?.right ?? 0, want: expected },
    { what: `${label}: distinct new period starts (one sweep, one now)`, got: st?.starts ?? 0, want: 1 },
    { what: `${label}: child.period_rolled events`, got: ev?.rolled ?? 0, want: expected },
    { what: `${label}: children with a period_rolled event`, got: ev?.children ?? 0, want: expected },
    { what: `${label}: due children rolled exactly once`, got: ev?.once ?? 0, want: expected },
    { what: `${label}: period_rolled bodies with the right ends and quota`, got: ev?.body_ok ?? 0, want: expected },
    { what: `${label}: child.updated (queued decrease applied)`, got: ev?.updated ?? 0, want: ev?.decreased ?? -1 },
    { what: `${label}: child.reactivated (exhausted suspension lifted)`, got: ev?.reactivated ?? 0, want: ev?.reactivates ?? -1 },
    { what: `${label}: children whose period starts at the sweep (nothing else rolled)`, got: moved?.n ?? 0, want: expected },
  ];
}

const maxSeq = async (db: Sql) => (await db<{ s: number }>`select coalesce(max(seq), 0)::int as s from events`)[0]?.s ?? 0;

/** One sweep through the production verb, timed; `now` only where the bench must look past the present. */
async function sweep(c: Ctx, now?: Date): Promise<{ children: number; pools: number; ms: number; lo: Date; hi: Date }> {
  const lo = new Date();
  const t = performance.now();
  const r = await rollOverDuePeriods({ ctx: c.deps, input: now ? { now } : {} });
  const ms = performance.now() - t;
  return { ...r, ms, lo: now ?? lo, hi: now ?? new Date() };
}

async function nothingDue(c: Ctx, now: Date | undefined, runs: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await sweep(c, now);
    if (r.children !== 0 || r.pools !== 0) throw new Error(`a sweep with nothing due rolled ${r.children} children and ${r.pools} pools`);
    times.push(r.ms);
  }
  return median(times);
}

/**
 * CPU time (ms) the database's client backends have used so far, read from /proc: the rollover's
 * cost without the waiting a busy machine adds to its wall time. Undefined where the server is not
 * a local process this user may read (PGlite, a remote server).
 */
async function backendCpuMs(db: Sql): Promise<number | undefined> {
  const rows = await db<{ pid: number }>`
    select pid from pg_stat_activity where datname = current_database() and backend_type = 'client backend'`;
  try {
    const ticks = rows.map(({ pid }) => {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      return Number(fields[11]) + Number(fields[12]);
    });
    const total = ticks.reduce((a, b) => a + b, 0);
    return Number.isFinite(total) && rows.length > 0 ? total * 10 : undefined;
  } catch {
    return undefined;
  }
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? 0;

/**
 * The plans sl_roll_over_children runs for one batch (the locking walk, then the statement that rolls
 * the batch), from auto_explain on a session of its own, in a transaction rolled back afterwards.
 * Null where the role may not load auto_explain.
 */
async function batchPlans(url: string, at: Date): Promise<{ lock: string[]; roll: string[] } | null> {
  const plans = { lock: [] as string[], roll: [] as string[] };
  const pg = await openExplainingSession(url, (plan) => {
    if (plan.includes('for update of s')) plans.lock = plan.split('\n');
    else if (plan.includes('with b as')) plans.roll = plan.split('\n');
  });
  if (!pg) return null;
  try {
    await pg
      .begin(async (tx) => {
        await tx`select sl_roll_over_children(${at.toISOString()}::timestamptz, ${BATCH}, true)`;
        throw new RollBack();
      })
      .catch((err: unknown) => {
        if (!(err instanceof RollBack)) throw err;
      });
    return plans;
  } finally {
    await pg.end({ timeout: 5 });
  }
}

class RollBack extends Error {}

/** The lines of a plan worth reading in a report: time, nodes, scans and their conditions. */
function planLines(lines: string[]): string[] {
  const keep = lines.filter((l) => /duration|Limit|LockRows|Scan|Index Cond|Join|Nested Loop|Insert|Update|Rows Removed/.test(l));
  return keep.map((l) => `    ${l.length > 150 ? `${l.slice(0, 147)}...` : l}`);
}

interface Side {
  name: string;
  db: Database;
  url: string | undefined;
  kind: string;
  ctx: Ctx;
  close(): Promise<void>;
  /** Probe sweeps: time, batches and children. */
  ms: number;
  batches: number;
  children: number;
}

async function openSide(name: string, t0: Date, total: number, probeEvery: number, main: boolean): Promise<Side> {
  const { db, kind, url, deps, close } = await openBenchService(2, { allowPrivateWebhooks: false });
  try {
    await db`
      create table bench_expect (phase text not null, sub_id uuid not null, key_id uuid not null, old_end timestamptz not null,
        quota int not null, topup int not null, decreased boolean not null, reactivates boolean not null,
        status_after text not null, reason_after text)`;
    await db`create index on bench_expect (phase, key_id)`;
    const started = performance.now();
    await seedPartners(db, t0);
    await seedChildren(db, t0, total, probeEvery, main);
    process.stdout.write(`  ${name}: seeded ${total} children in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    return { name, db, url, kind, ctx: { db, deps }, close, ms: 0, batches: 0, children: 0 };
  } catch (err) {
    await close();
    throw err;
  }
}

export async function run(): Promise<void> {
  process.stdout.write(`bench rollover; ${machineLine()}\n`);
  const t0 = new Date();
  const { probes, main: mainNow } = instants(t0);
  const checks: Check[] = [];
  const sides: Side[] = [];
  try {
    const small = await openSide('small', t0, N, PROBE_EVERY, false);
    sides.push(small);
    const large = await openSide('large', t0, 10 * N, PROBE_EVERY, true);
    sides.push(large);
    // Both databases share the server's WAL: the seeds' dirty pages are written out now, not during a probe.
    await large.db`checkpoint`;
    process.stdout.write(`  database: ${large.kind}\n`);

    // 1. Cost per batch: the probe sets, small, large, large, small.
    const rounds: Array<[Side, 0 | 1]> = [
      [small, 0],
      [large, 0],
      [large, 1],
      [small, 1],
    ];
    for (const [side, i] of rounds) {
      const phase = `probe ${i + 1}`;
      const due = await expectDue(side.db, phase, probes[i]);
      const seq = await maxSeq(side.db);
      const r = await sweep(side.ctx, probes[i]);
      checks.push(...(await verify(side.db, `${side.name} ${phase}`, phase, seq, r, r.children)));
      side.ms += r.ms;
      side.batches += Math.ceil(due / BATCH);
      side.children += due;
      process.stdout.write(`  ${side.name} ${phase}: ${due} due children rolled in ${r.ms.toFixed(0)} ms\n`);
    }
    const perBatchSmall = small.ms / small.batches;
    const perBatchLarge = large.ms / large.batches;
    const nothingSmall = await nothingDue(small.ctx, undefined, NOTHING_RUNS);

    // 2. The big rollover, in the large database.
    const db = large.db;
    const due = await expectDue(db, 'main', mainNow);
    await db`create table bench_pool_expect (id uuid primary key, quota int not null, invoice_pence numeric)`;
    await db`
      insert into bench_pool_expect
      select id, coalesce(pending_monthly_id_quota, monthly_id_quota),
             case when pool_billing_mode = 'invoice_monthly' then overage_ids_this_period * partner_per_id_pence end
      from pools where current_period_end <= ${mainNow}`;
    const [poolsDue] = await db<{ n: number; invoices: number }>`
      select count(*)::int as n, count(invoice_pence)::int as invoices from bench_pool_expect`;
    const plans = large.url ? await batchPlans(large.url, mainNow) : null;
    const seq = await maxSeq(db);
    const cpuBefore = large.url ? await backendCpuMs(db) : undefined;
    const main = await sweep(large.ctx, mainNow);
    const cpuAfter = cpuBefore === undefined ? undefined : await backendCpuMs(db);
    const cpuPerChild = cpuAfter === undefined || cpuBefore === undefined ? undefined : ((cpuAfter - cpuBefore) * 1000) / Math.max(1, due);
    checks.push(...(await verify(db, 'main', 'main', seq, main, main.children)));
    const [pv] = await db<{ right: number; invoiced: number }>`
      select count(*) filter (where p.ids_used_this_period = 0 and p.overage_ids_this_period = 0 and p.monthly_id_quota = e.quota
                                and p.pending_monthly_id_quota is null and p.current_period_start = ${mainNow}
                                and p.current_period_end = ${mainNow}::timestamptz + interval '30 days')::int as right,
             (select count(*) from invoices i join bench_pool_expect e on e.id = i.pool_id
              where i.amount_pence = e.invoice_pence and i.status = 'outstanding')::int as invoiced
      from bench_pool_expect e join pools p on p.id = e.id`;
    checks.push(
      { what: 'main: pools the sweep reported', got: main.pools, want: poolsDue?.n ?? -1 },
      { what: 'main: due pools in the new period, usage 0, quota right', got: pv?.right ?? 0, want: poolsDue?.n ?? -1 },
      { what: 'main: monthly-invoice pools invoiced once, for their overage', got: pv?.invoiced ?? 0, want: poolsDue?.invoices ?? -1 },
    );
    const [evs] = await db<{ n: number }>`select count(*)::int as n from events where seq > ${seq}`;
    const [size] = await db<{ n: number }>`select count(*)::int as n from child_subscriptions`;

    // 3. Nothing due: at the big rollover's instant (its rows' old index entries still in range), and
    // at the present (the scheduled function's call).
    const nothingMain = await nothingDue(large.ctx, mainNow, NOTHING_RUNS);
    const nothingNow = await nothingDue(large.ctx, undefined, NOTHING_RUNS);

    // Baseline: the same sweep without migration 0020's indexes.
    await db`drop index child_subscriptions_period_end`;
    await db`drop index pools_period_end`;
    const baselineNothing = await nothingDue(large.ctx, mainNow, 11);
    await db`create index child_subscriptions_period_end on child_subscriptions (current_period_end)`;
    await db`create index pools_period_end on pools (current_period_end) where current_period_end is not null`;

    const failed = checks.filter((k) => k.got !== k.want);
    const ratio = perBatchLarge / perBatchSmall;
    const batchRow = (side: Side) => [
      `ms per batch of ${BATCH}, ${side.name}: ${side.children} due of ${side === small ? N : size?.n} children, ${side.batches} batches`,
      (side.ms / side.batches).toFixed(1),
      '',
    ];
    process.stdout.write(
      [
        '',
        formatTable(
          ['measure', 'value', 'goal'],
          [
            [
              [
                `rollover of ${due} due children + ${main.pools} pools (${size?.n} children)`,
                `${(main.ms / 1000).toFixed(2)} s`,
                `≤ 20 s: ${verdict(main.ms <= 20_000)}`,
              ],
              ['  per child', `${((main.ms * 1000) / Math.max(1, due)).toFixed(0)} µs`, ''],
              ...(cpuPerChild === undefined
                ? []
                : [['  Postgres CPU per child (its backends, /proc; 10 ms ticks)', `${cpuPerChild.toFixed(0)} µs`, '']]),
              ['  events written', String(evs?.n ?? 0), ''],
            ],
            [batchRow(small), batchRow(large), ['  large / small', ratio.toFixed(2), `≤ 1.5: ${verdict(ratio <= 1.5)}`]],
            [
              [
                `nothing due, median of ${NOTHING_RUNS}, right after the rollover (large)`,
                `${nothingMain.toFixed(2)} ms`,
                `≤ 2 ms: ${verdict(nothingMain <= 2)}`,
              ],
              [`nothing due, median of ${NOTHING_RUNS}, at the present (large)`, `${nothingNow.toFixed(2)} ms`, ''],
              [`nothing due, median of ${NOTHING_RUNS}, at the present (small)`, `${nothingSmall.toFixed(2)} ms`, ''],
              ['nothing due, median of 11, without the 0020 indexes (baseline)', `${baselineNothing.toFixed(2)} ms`, ''],
            ],
          ],
        ),
        '',
        formatTable(
          ['database check', 'got', 'want', ''],
          [checks.map((k) => [k.what, String(k.got), String(k.want), k.got === k.want ? 'ok' : 'WRONG'])],
        ),
        '',
        ...(plans
          ? [
              "auto_explain of one batch of sl_roll_over_children at the big rollover's instant (large; rolled back):",
              '  the locking walk:',
              ...planLines(plans.lock),
              '  the statement that rolls the batch:',
              ...planLines(plans.roll),
            ]
          : []),
        '',
      ].join('\n'),
    );
    printFigures([
      figure('rollover', `roll over ${due} due children`, { ours: round(main.ms / 1000, 2), goal: 'ours <= 20', unit: 's' }),
      figure('rollover', 'sweep with nothing due (median)', {
        ours: round(nothingMain, 3),
        baseline: round(baselineNothing, 3),
        goal: 'ours <= 2',
        unit: 'ms',
      }),
      figure('rollover', `ms per batch, ${size?.n} vs ${N} children`, {
        ours: round(perBatchLarge, 2),
        baseline: round(perBatchSmall, 2),
        goal: 'ratio <= 1.5',
        unit: 'ms',
      }),
    ]);
    if (failed.length) {
      process.stderr.write(
        `rollover: ${failed.length} database check(s) wrong: ${failed.map((k) => `${k.what} (${k.got} ≠ ${k.want})`).join('; ')}\n`,
      );
      process.exitCode = 1;
    }
  } finally {
    for (const side of sides) await side.close();
  }
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;
