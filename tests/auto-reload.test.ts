import { type ChargeRequest, configureAutoReload, consumeIdentification, creditTopup } from '@sightline/core';
import { createStripeProcessor } from '@sightline/core/payments/stripe';
import { HttpResponse, http } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { eventsOf, names } from './support/events.ts';
import { createChildVia, seedDirectKey, seedPartner } from './support/seed.ts';

/** Stripe answers, in the shapes of its API reference (PaymentIntent object; card_error on decline). */
const STRIPE = 'https://api.stripe.com/v1/payment_intents';
interface SeenCharge {
  body: URLSearchParams;
  idempotencyKey: string | null;
  auth: string | null;
}
const seen: SeenCharge[] = [];
let decline: false | 'card_declined' = false;
// PaymentIntent ids are unique for the whole run, as Stripe's are (credits are idempotent per id).
let intents = 0;
// Charges in progress per pool, and the most seen at once: the in-flight rule made observable.
const inFlight = new Map<string, number>();
const peak = new Map<string, number>();
let holdMs = 0;

const stripe = setupServer(
  http.post(STRIPE, async ({ request }) => {
    const body = new URLSearchParams(await request.text());
    seen.push({ body, idempotencyKey: request.headers.get('idempotency-key'), auth: request.headers.get('authorization') });
    const pool = body.get('metadata[pool_id]') ?? '';
    inFlight.set(pool, (inFlight.get(pool) ?? 0) + 1);
    peak.set(pool, Math.max(peak.get(pool) ?? 0, inFlight.get(pool) ?? 0));
    await new Promise((r) => setTimeout(r, holdMs));
    inFlight.set(pool, (inFlight.get(pool) ?? 1) - 1);
    const id = `pi_${(++intents).toString().padStart(24, '0')}`;
    if (decline) {
      return HttpResponse.json(
        {
          error: {
            type: 'card_error',
            code: 'card_declined',
            decline_code: 'insufficient_funds',
            message: 'Your card has insufficient funds.',
            payment_intent: { id, object: 'payment_intent', status: 'requires_payment_method' },
          },
        },
        { status: 402 },
      );
    }
    return HttpResponse.json({
      id,
      object: 'payment_intent',
      amount: Number(body.get('amount')),
      currency: body.get('currency'),
      status: 'succeeded',
      payment_method: body.get('payment_method'),
      customer: body.get('customer'),
      livemode: false,
    });
  }),
);

let env: TestEnv;
beforeAll(async () => {
  stripe.listen({ onUnhandledRequest: 'bypass' });
  env = await createTestEnv({ payments: createStripeProcessor('sk_test_sightline_unit') });
});
afterEach(() => {
  seen.length = 0;
  decline = false;
  holdMs = 0;
});
afterAll(async () => {
  stripe.close();
  await env.close();
});

const request: ChargeRequest = {
  amountPence: 250,
  currency: 'gbp',
  paymentMethodId: 'pm_card_visa',
  customerId: 'cus_123',
  idempotencyKey: 'reload-test-1',
  description: 'Sightline auto-reload: 100 IDs',
  metadata: { pool_id: 'p1' },
};

describe('Stripe adapter', () => {
  it('creates a confirmed off-session PaymentIntent with the idempotency key', async () => {
    const result = await createStripeProcessor('sk_test_sightline_unit').charge(request);
    expect(result).toEqual({ status: 'succeeded', paymentRef: expect.stringMatching(/^pi_\d{24}$/) as unknown });
    const [charge] = seen;
    expect(charge?.idempotencyKey).toBe('reload-test-1');
    expect(charge?.auth).toBe('Bearer sk_test_sightline_unit');
    expect(Object.fromEntries(charge?.body ?? [])).toMatchObject({
      amount: '250',
      currency: 'gbp',
      payment_method: 'pm_card_visa',
      customer: 'cus_123',
      off_session: 'true',
      confirm: 'true',
      'metadata[pool_id]': 'p1',
    });
  });

  it('turns card_declined into a declined result with the decline code', async () => {
    decline = 'card_declined';
    const result = await createStripeProcessor('sk_test_sightline_unit').charge(request);
    expect(result).toEqual({
      status: 'declined',
      paymentRef: expect.stringMatching(/^pi_\d{24}$/) as unknown,
      code: 'insufficient_funds',
      message: 'Your card has insufficient funds.',
    });
  });
});

/** A partner whose own tracker draws on a pool with auto-reload below `threshold`. */
async function reloadingPartner(opts: { quota: number; topup?: number; threshold: number; amount: number }) {
  const p = await seedPartner(env.deps, { quota: opts.quota, topup: opts.topup ?? 0, perIdPence: 2.5 });
  await configureAutoReload({
    ctx: env.deps,
    input: {
      accountId: p.account_id,
      enabled: true,
      thresholdIds: opts.threshold,
      topupAmountIds: opts.amount,
      paymentMethodId: 'pm_card_visa',
      customerId: 'cus_42',
    },
  });
  const own = await seedDirectKey(env.deps, p.account_id);
  return { ...p, trackerKeyId: own.api_key_id };
}
const consume = (apiKeyId: string) => consumeIdentification({ ctx: env.deps, input: { apiKeyId } });
const poolState = async (key: string) =>
  (await call(env, 'partner-pool-state', { key })).body as { pool: Json; auto_reload: Json; recent_topups: Json[] };

describe('auto-reload', () => {
  it('charges topup_amount_ids × rate once available drops below the threshold, and credits the pool', async () => {
    const p = await reloadingPartner({ quota: 12, threshold: 10, amount: 100 });
    for (let i = 0; i < 2; i++) await consume(p.trackerKeyId);
    await env.settle();
    expect(seen).toHaveLength(0);
    await consume(p.trackerKeyId); // available 9 < 10
    await env.settle();
    expect(seen).toHaveLength(1);
    expect(seen[0]?.body.get('amount')).toBe('250');
    expect(seen[0]?.body.get('customer')).toBe('cus_42');
    const state = await poolState(p.key);
    expect(state.pool).toMatchObject({ topup_balance: 100, available: 109 });
    expect(state.recent_topups[0]).toMatchObject({ amount_ids: 100, status: 'completed' });
    expect(state.auto_reload).toMatchObject({ consecutive_declines: 0, last_declined_at: null });
  });

  it('records declines (last_declined_at, consecutive_declines) and a later success resets the streak', async () => {
    const p = await reloadingPartner({ quota: 20, threshold: 30, amount: 50 });
    decline = 'card_declined';
    await consume(p.trackerKeyId);
    await env.settle();
    let state = await poolState(p.key);
    expect(state.auto_reload.consecutive_declines).toBe(1);
    expect(state.auto_reload.last_declined_at).not.toBeNull();
    expect(state.pool.topup_balance).toBe(0);
    expect(state.recent_topups).toEqual([]);
    await consume(p.trackerKeyId);
    await env.settle();
    expect((await poolState(p.key)).auto_reload.consecutive_declines).toBe(2);
    decline = false;
    await consume(p.trackerKeyId);
    await env.settle();
    state = await poolState(p.key);
    expect(state.auto_reload.consecutive_declines).toBe(0);
    expect(state.pool.topup_balance).toBe(50);
  });

  it('keeps only one reload in flight per pool, however many consumptions cross the threshold', async () => {
    const p = await reloadingPartner({ quota: 40, threshold: 35, amount: 10 });
    holdMs = 50;
    await Promise.all(Array.from({ length: 20 }, () => consume(p.trackerKeyId)));
    await env.settle();
    const [pool] = await env.db<{ id: string }>`select id from pools where account_id = ${p.account_id}`;
    expect(peak.get(pool?.id ?? '')).toBe(1);
    const refs = seen.map((s) => s.idempotencyKey);
    expect(new Set(refs).size).toBe(refs.length);
    const [row] = await env.db<{ n: number; total: number }>`
      select count(*)::int as n, coalesce(sum(amount_ids), 0)::int as total from topups t
      join pools p on p.id = t.pool_id where p.account_id = ${p.account_id} and t.source = 'auto_reload' and t.status = 'completed'`;
    expect(row?.n).toBe(seen.length);
    expect(row?.n).toBeGreaterThanOrEqual(1);
  });

  it('refills an empty prepaid pool before the identification, which then succeeds', async () => {
    const p = await reloadingPartner({ quota: 1, threshold: 1, amount: 5 });
    await consume(p.trackerKeyId); // uses the only quota ID; available 0 < 1 → background reload
    await env.settle();
    await env.db`update pools set topup_balance = 0, reload_started_at = null where account_id = ${p.account_id}`;
    const result = await consume(p.trackerKeyId);
    expect(result).toMatchObject({ outcome: 'consumed', pool_source: 'topup' });
    expect((await poolState(p.key)).pool.topup_balance).toBe(4);
  });

  it('without a saved card, an empty prepaid pool stays empty and the identification does not happen', async () => {
    const p = await seedPartner(env.deps, { quota: 1, perIdPence: 2 });
    await configureAutoReload({ ctx: env.deps, input: { accountId: p.account_id, enabled: true, thresholdIds: 5, topupAmountIds: 10 } });
    const own = await seedDirectKey(env.deps, p.account_id);
    expect((await consume(own.api_key_id)).outcome).toBe('consumed');
    expect((await consume(own.api_key_id)).outcome).toBe('pool_exhausted');
    await env.settle();
    expect(seen).toHaveLength(0);
  });
});

describe('top-up purchases', () => {
  it('credit a pool once per payment confirmation, however often it is replayed', async () => {
    const p = await seedPartner(env.deps, { quota: 0 });
    const first = await creditTopup({
      ctx: env.deps,
      input: { paymentRef: 'pi_replayed', poolAccountId: p.account_id, amount: 30, source: 'operator' },
    });
    const again = await Promise.all(
      Array.from({ length: 5 }, () =>
        creditTopup({ ctx: env.deps, input: { paymentRef: 'pi_replayed', poolAccountId: p.account_id, amount: 30, source: 'operator' } }),
      ),
    );
    expect(first.credited).toBe(true);
    expect(again.every((r) => !r.credited)).toBe(true);
    expect((await poolState(p.key)).pool.topup_balance).toBe(30);
  });

  it('a purchase for a suspended child emits topup_changed (purchase) and child.reactivated in one transaction', async () => {
    const p = await seedPartner(env.deps, { quota: 100 });
    const c = await createChildVia(env, p.key, { monthly_id_quota: 1 });
    await consume(c.child.api_key_id);
    const res = await creditTopup({
      ctx: env.deps,
      input: { paymentRef: 'pi_child_1', childApiKeyId: c.child.api_key_id, amount: 4, source: 'purchase' },
    });
    expect(res.credited).toBe(true);
    const events = await eventsOf(env.db, c.child.api_key_id);
    expect(names(events).slice(-2)).toEqual(['child.topup_changed', 'child.reactivated']);
    expect(events.at(-2)?.data).toEqual({
      child_api_key_id: c.child.api_key_id,
      previous_topup_balance: 0,
      topup_balance: 4,
      delta: 4,
      reason: 'purchase',
    });
    expect(events.at(-1)?.data.reason).toBe('topup_purchased');
  });
});
