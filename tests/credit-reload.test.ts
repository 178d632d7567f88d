/**
 * Credit auto-reload of an account (api-update-settings turns it on; the operator sets what it buys
 * and the card): when a debit takes the balance below the threshold, one charge through the payment
 * port, credited once. With DATABASE_URL set the Promise.all batches below run on parallel
 * backends of a 20-connection pool and meet on the account's row lock; on PGlite they serialise,
 * and the same invariants must hold.
 */

import { runCreditReload, startAfterWork } from '@sightline/core';
import { runOperatorCommand } from '@sightline/host';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { realIpDeps } from './support/ip.ts';
import { countingProcessor } from './support/payments.ts';
import { seedDirectAccount } from './support/seed.ts';
import { seedConnectedUser, userHeaders } from './support/users.ts';

const payments = countingProcessor();
let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv({ pool: 20, payments: payments.processor, ip: realIpDeps() });
});
afterAll(() => env.close());
afterEach(() => payments.reset());

/**
 * An account with credits and auto-reload on: below `threshold`, buy `amount` credits at 2p each.
 * Set up as in production: the operator's set-credit-reload, then the account's own settings.
 */
async function reloadingAccount(opts: { balance: number; threshold: number; amount: number }) {
  const a = await seedDirectAccount(env.deps, 'Reloading');
  const { user_id } = await seedConnectedUser(env.db, a.account_id);
  if (opts.balance > 0) await env.db`select sl_grant_credits(${a.account_id}, ${opts.balance})`;
  await runOperatorCommand(env.deps, 'set-credit-reload', {
    'account-id': a.account_id,
    amount: String(opts.amount),
    'price-pence': '2',
    card: 'pm_card_visa',
    customer: 'cus_test',
  });
  const res = await call(env, 'api-update-settings', {
    key: a.key,
    body: { auto_reload_enabled: true, auto_reload_threshold: opts.threshold },
    headers: userHeaders(user_id),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { ...a, userId: user_id };
}

/** One debit as the charging paths make it: in its own transaction, then the claimed reload off the request path. */
async function debit(accountId: string, amount: number): Promise<boolean> {
  const [row] = await env.db<{ reload: boolean }>`select sl_debit_credits(${accountId}, 'message', ${amount}, null, null) as reload`;
  if (row?.reload) startAfterWork(env.deps, 'credit-reload', { accountId });
  return row?.reload === true;
}

async function ledger(accountId: string) {
  const [row] = await env.db<{ balance: number; reloads: number; in_flight: boolean; low: number; reloaded: number; failed: number }>`
    select a.credit_balance as balance,
           (select count(*)::int from credit_transactions t where t.account_id = a.id and t.type = 'reload') as reloads,
           a.credit_reload_started_at is not null as in_flight,
           (select count(*)::int from events e where e.partner_account_id = a.id and e.event = 'credits.low') as low,
           (select count(*)::int from events e where e.partner_account_id = a.id and e.event = 'credits.reloaded') as reloaded,
           (select count(*)::int from events e where e.partner_account_id = a.id and e.event = 'credits.reload_failed') as failed
    from accounts a where a.id = ${accountId}`;
  if (!row) throw new Error(`no account ${accountId}`);
  return row;
}

describe('credit auto-reload', () => {
  it.skipIf(!usingPostgres)('runs concurrent statements on several Postgres backends at once (the races above are real)', async () => {
    const rows = await Promise.all(
      Array.from({ length: 20 }, () => env.db<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(0.05)::text as slept`),
    );
    expect(new Set(rows.map((r) => r[0]?.pid)).size).toBeGreaterThanOrEqual(10);
  });

  it('charges once and credits once when concurrent debits cross the threshold, and claims nothing while the charge is in flight', async () => {
    const a = await reloadingAccount({ balance: 1000, threshold: 500, amount: 300 });
    const release = payments.holdCharges();
    const claims = await Promise.all(Array.from({ length: 20 }, () => debit(a.account_id, 30)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    // The charge is held: more debits below the threshold find it in flight.
    const more = await Promise.all(Array.from({ length: 10 }, () => debit(a.account_id, 10)));
    expect(more.filter(Boolean)).toHaveLength(0);
    expect(await ledger(a.account_id)).toMatchObject({ balance: 300, reloads: 0, in_flight: true, low: 1 });
    release();
    await env.settle();
    expect(payments.charges).toHaveLength(1);
    expect(payments.peak()).toBe(1);
    expect(payments.charges[0]).toMatchObject({ amountPence: 600, currency: 'gbp', paymentMethodId: 'pm_card_visa', customerId: 'cus_test' });
    expect(await ledger(a.account_id)).toEqual({ balance: 600, reloads: 1, in_flight: false, low: 1, reloaded: 1, failed: 0 });
  });

  it('credits a replayed payment reference nothing, however many replays race', async () => {
    const a = await reloadingAccount({ balance: 100, threshold: 50, amount: 200 });
    expect(await debit(a.account_id, 60)).toBe(true);
    await env.settle();
    const [reload] = await env.db<{
      payment_ref: string;
    }>`select payment_ref from credit_transactions where account_id = ${a.account_id} and type = 'reload'`;
    expect(reload?.payment_ref).toMatch(/^pay_test_/);
    const replays = await Promise.all(
      Array.from(
        { length: 8 },
        () => env.db<{ balance: number | null }>`select sl_credit_reload(${a.account_id}, ${reload?.payment_ref ?? ''}, 200) as balance`,
      ),
    );
    expect(replays.map(([r]) => r?.balance)).toEqual(Array(8).fill(null));
    // A new reference racing itself is credited exactly once.
    const fresh = await Promise.all(
      Array.from({ length: 8 }, () => env.db<{ balance: number | null }>`select sl_credit_reload(${a.account_id}, 'pay_manual_1', 200) as balance`),
    );
    expect(fresh.filter(([r]) => r?.balance !== null)).toHaveLength(1);
    expect(await ledger(a.account_id)).toMatchObject({ balance: 440, reloads: 2, reloaded: 2 });
  });

  it('on a decline, tells the account (credits.reload_failed), ends the claim, and cools off before the next attempt', async () => {
    const a = await reloadingAccount({ balance: 100, threshold: 50, amount: 200 });
    payments.state.outcome = 'decline';
    expect(await debit(a.account_id, 60)).toBe(true);
    await env.settle();
    expect(payments.charges).toHaveLength(1);
    expect(await ledger(a.account_id)).toEqual({ balance: 40, reloads: 0, in_flight: false, low: 1, reloaded: 0, failed: 1 });
    const [failed] = await env.db<{
      body: string;
    }>`select body from events where partner_account_id = ${a.account_id} and event = 'credits.reload_failed'`;
    expect(JSON.parse(failed?.body ?? '{}').data).toEqual({ amount: 200, reason: 'card_declined' });

    // Within the cool-off (1 hour after a first decline) debits do not charge the card again.
    payments.state.outcome = 'succeed';
    for (let i = 0; i < 3; i++) expect(await debit(a.account_id, 1)).toBe(false);
    await env.settle();
    expect(payments.charges).toHaveLength(1);

    await env.db`update accounts set credit_reload_declined_at = now() - interval '61 minutes' where id = ${a.account_id}`;
    expect(await debit(a.account_id, 1)).toBe(true);
    await env.settle();
    expect(payments.charges).toHaveLength(2);
    // A new attempt is a new payment, never a replay of the declined one.
    expect(payments.charges[1]?.idempotencyKey).not.toBe(payments.charges[0]?.idempotencyKey);
    // Still the same dip below the threshold: credits.low is not sent again.
    expect(await ledger(a.account_id)).toEqual({ balance: 236, reloads: 1, in_flight: false, low: 1, reloaded: 1, failed: 1 });
  });

  it('doubles the cool-off with each decline in a row, and a new card from the operator ends it', async () => {
    const a = await reloadingAccount({ balance: 100, threshold: 50, amount: 200 });
    payments.state.outcome = 'decline';
    expect(await debit(a.account_id, 60)).toBe(true);
    await env.settle();
    await env.db`update accounts set credit_reload_declined_at = now() - interval '61 minutes' where id = ${a.account_id}`;
    expect(await debit(a.account_id, 1)).toBe(true);
    await env.settle();
    // Second decline in a row: 2 hours.
    await env.db`update accounts set credit_reload_declined_at = now() - interval '61 minutes' where id = ${a.account_id}`;
    expect(await debit(a.account_id, 1)).toBe(false);
    await runOperatorCommand(env.deps, 'set-credit-reload', { 'account-id': a.account_id, amount: '200', 'price-pence': '2', card: 'pm_new_card' });
    payments.state.outcome = 'succeed';
    expect(await debit(a.account_id, 1)).toBe(true);
    await env.settle();
    expect(payments.charges).toHaveLength(3);
    expect(await ledger(a.account_id)).toMatchObject({ balance: 237, reloads: 1, in_flight: false });
  });

  it('leaves no claim behind when a reload does not lift the balance over the threshold; the next debit claims again', async () => {
    const a = await reloadingAccount({ balance: 500, threshold: 1000, amount: 100 });
    // Turning auto-reload on below the threshold reloads at once; 600 is still below it.
    await env.settle();
    expect(await ledger(a.account_id)).toMatchObject({ balance: 600, reloads: 1, in_flight: false });
    expect(await debit(a.account_id, 1)).toBe(true);
    await env.settle();
    expect(await ledger(a.account_id)).toMatchObject({ balance: 699, reloads: 2, in_flight: false });
    expect(payments.charges).toHaveLength(2);
  });

  it('when the processor cannot be reached, ends the claim and retries the same charge (same key) at the next debit', async () => {
    const a = await reloadingAccount({ balance: 100, threshold: 50, amount: 200 });
    payments.state.outcome = 'fail';
    expect(await debit(a.account_id, 60)).toBe(true);
    await env.settle();
    expect(await ledger(a.account_id)).toMatchObject({ balance: 40, reloads: 0, in_flight: false });
    payments.state.outcome = 'succeed';
    expect(await debit(a.account_id, 1)).toBe(true);
    await env.settle();
    expect(await ledger(a.account_id)).toMatchObject({ balance: 239, reloads: 1, in_flight: false });
    // The first charge may have gone through with its answer lost: the retry is the same payment.
    expect(payments.charges).toHaveLength(2);
    expect(payments.charges[1]?.idempotencyKey).toBe(payments.charges[0]?.idempotencyKey);
  });

  it('takes over a claim whose process died before charging or crediting (older than 10 minutes), with the same key', async () => {
    const a = await reloadingAccount({ balance: 100, threshold: 50, amount: 200 });
    // The debit claimed; its process died before runCreditReload finished.
    const [row] = await env.db<{ reload: boolean }>`select sl_debit_credits(${a.account_id}, 'message', 60, null, null) as reload`;
    expect(row?.reload).toBe(true);
    const [claim] = await env.db<{ key: string }>`select credit_reload_key as key from accounts where id = ${a.account_id}`;
    await env.db`update accounts set credit_reload_started_at = now() - interval '11 minutes' where id = ${a.account_id}`;
    expect(await debit(a.account_id, 1)).toBe(true);
    await env.settle();
    expect(await ledger(a.account_id)).toMatchObject({ balance: 239, reloads: 1, in_flight: false });
    expect(payments.charges.map((c) => c.idempotencyKey)).toEqual([`credit-reload-${claim?.key}`]);
  });

  it('does nothing without a claim (a reload run twice, or for an account that wants none)', async () => {
    const a = await reloadingAccount({ balance: 100, threshold: 50, amount: 200 });
    expect(await runCreditReload({ ctx: env.deps, input: { accountId: a.account_id } })).toBe('skipped');
    expect(payments.charges).toHaveLength(0);
  });

  it('stays off while auto_reload_enabled is false: credits.low still tells the account once per dip', async () => {
    const a = await reloadingAccount({ balance: 100, threshold: 50, amount: 200 });
    await call(env, 'api-update-settings', { key: a.key, body: { auto_reload_enabled: false }, headers: userHeaders(a.userId) });
    expect(await debit(a.account_id, 60)).toBe(false);
    expect(await debit(a.account_id, 10)).toBe(false);
    await env.db`select sl_grant_credits(${a.account_id}, 100)`;
    expect(await debit(a.account_id, 100)).toBe(false);
    await env.settle();
    expect(payments.charges).toHaveLength(0);
    expect(await ledger(a.account_id)).toMatchObject({ balance: 30, reloads: 0, low: 2 });
  });

  it('reloads when a paid lookup (ip-to-company) takes the balance below the threshold', async () => {
    const a = await reloadingAccount({ balance: 52, threshold: 50, amount: 100 });
    const res = await call(env, 'ip-to-company', { key: a.key, body: { ip: '17.253.144.10' } });
    expect(res.body).toMatchObject({ identified: true, domain: 'apple.com' });
    await env.settle();
    expect(payments.charges).toHaveLength(1);
    expect(await ledger(a.account_id)).toMatchObject({ balance: 147, reloads: 1, in_flight: false, low: 1, reloaded: 1 });
  });

  it('reloads at once when the account turns auto-reload on while already below its threshold', async () => {
    const a = await seedDirectAccount(env.deps, 'Already low');
    const { user_id } = await seedConnectedUser(env.db, a.account_id);
    await env.db`select sl_grant_credits(${a.account_id}, 10)`;
    await runOperatorCommand(env.deps, 'set-credit-reload', {
      'account-id': a.account_id,
      amount: '500',
      'price-pence': '0.5',
      card: 'pm_card_visa',
    });
    const res = await call(env, 'api-update-settings', {
      key: a.key,
      body: { auto_reload_threshold: 100, auto_reload_enabled: true },
      headers: userHeaders(user_id),
    });
    expect(res.status).toBe(200);
    await env.settle();
    expect(payments.charges.map((c) => c.amountPence)).toEqual([250]);
    expect(await ledger(a.account_id)).toMatchObject({ balance: 510, reloads: 1, low: 1 });
  });
});
