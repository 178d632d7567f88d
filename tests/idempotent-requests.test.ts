import {
  AppError,
  beginIdempotentRequest,
  createUsageMeter,
  IDEMPOTENCY_RETENTION_DAYS,
  purgeIdempotentRequests,
  releaseIdempotentRequest,
  type Sql,
  silentLogger,
} from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { seedDirectAccount } from './support/seed.ts';

/**
 * The two stores the connected-user endpoints stand on: the idempotency store (one key, one outcome)
 * and the usage meter (counts written in batches, never lost to a database blip).
 */
let env: TestEnv;
let accountId = '';
const USER = '7d1f0c3e-8b9a-4c5d-9e6f-0a1b2c3d4e5f';

beforeAll(async () => {
  env = await createTestEnv({ pool: 4 });
  accountId = (await seedDirectAccount(env.deps)).account_id;
});
afterAll(() => env.close());

const begin = (key: string, request: unknown, leaseMs = 60_000, operation = 'test-op') =>
  beginIdempotentRequest({ ctx: env.deps, input: { accountId, key, operation, userId: USER, request, leaseMs } });

describe('idempotency store', () => {
  it('answers started, then processing while the work runs, then the stored outcome byte for byte', async () => {
    const key = crypto.randomUUID();
    expect(await begin(key, { a: 1, b: [1, 2] })).toEqual({ outcome: 'started' });
    expect(await begin(key, { a: 1, b: [1, 2] })).toEqual({ outcome: 'processing' });
    const body = '{"success":true,"z":1,"a":"é"}';
    await env.db`select sl_complete_idempotent(${accountId}, ${key}, 201, ${body})`;
    expect(await begin(key, { a: 1, b: [1, 2] })).toEqual({ outcome: 'completed', status: 201, body });
  });

  it('matches a repeat whatever order its fields come in', async () => {
    const key = crypto.randomUUID();
    await begin(key, { a: 1, nested: { x: 1, y: 2 } });
    expect(await begin(key, { nested: { y: 2, x: 1 }, a: 1 })).toEqual({ outcome: 'processing' });
  });

  it('refuses the same key for a different request, user or operation with a 422', async () => {
    const key = crypto.randomUUID();
    await begin(key, { a: 1 });
    await expect(begin(key, { a: 2 })).rejects.toMatchObject({ status: 422 });
    await expect(begin(key, { a: 1 }, 60_000, 'other-op')).rejects.toBeInstanceOf(AppError);
    await expect(
      beginIdempotentRequest({
        ctx: env.deps,
        input: { accountId, key, operation: 'test-op', userId: crypto.randomUUID(), request: { a: 1 }, leaseMs: 60_000 },
      }),
    ).rejects.toMatchObject({ status: 422 });
  });

  it('lets a repeat take the work over once the worker’s lease has run out', async () => {
    const key = crypto.randomUUID();
    expect(await begin(key, {}, 1)).toEqual({ outcome: 'started' });
    await new Promise((r) => setTimeout(r, 20));
    expect(await begin(key, {})).toEqual({ outcome: 'started' });
    expect(await begin(key, {})).toEqual({ outcome: 'processing' });
  });

  it('gives a key back after a refusal, and never a completed one', async () => {
    const key = crypto.randomUUID();
    await begin(key, { a: 1 });
    await releaseIdempotentRequest({ ctx: env.deps, input: { accountId, key } });
    // Released: the fixed request (even a different one) may use the key again.
    expect(await begin(key, { a: 2 })).toEqual({ outcome: 'started' });
    await env.db`select sl_complete_idempotent(${accountId}, ${key}, 200, '{}')`;
    await releaseIdempotentRequest({ ctx: env.deps, input: { accountId, key } });
    expect(await begin(key, { a: 2 })).toMatchObject({ outcome: 'completed' });
  });

  it.skipIf(!process.env.DATABASE_URL)('a key given back while a repeat waits for it: the repeat starts afresh, with its own row', async () => {
    const key = crypto.randomUUID();
    await begin(key, { a: 1 });
    // A refused request giving its key back, holding the row while the repeat arrives and waits for it.
    const giveBack = env.db.begin(async (tx) => {
      await tx`select 1 from idempotent_requests where account_id = ${accountId} and idempotency_key = ${key} for update`;
      await new Promise((r) => setTimeout(r, 300));
      await tx`delete from idempotent_requests where account_id = ${accountId} and idempotency_key = ${key}`;
    });
    await new Promise((r) => setTimeout(r, 100));
    const repeat = begin(key, { a: 1 });
    await giveBack;
    expect(await repeat).toEqual({ outcome: 'started' });
    // Started with a row to complete: the work it does can be stored.
    await env.db`select sl_complete_idempotent(${accountId}, ${key}, 200, '{}')`;
    expect(await begin(key, { a: 1 })).toMatchObject({ outcome: 'completed' });
  });

  it('keeps keys per account: the same key in two accounts is two requests', async () => {
    const key = crypto.randomUUID();
    const other = (await seedDirectAccount(env.deps, 'Other')).account_id;
    await begin(key, { a: 1 });
    const theirs = await beginIdempotentRequest({
      ctx: env.deps,
      input: { accountId: other, key, operation: 'test-op', userId: USER, request: { a: 2 }, leaseMs: 60_000 },
    });
    expect(theirs).toEqual({ outcome: 'started' });
  });
});

describe('idempotency retention', () => {
  it('forgets completed outcomes and abandoned keys past the retention, never one at work or a recent one', async () => {
    const [old, recent, stuck, abandoned] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    for (const key of [old, recent, stuck]) await begin(key, {});
    // A worker that crashed long ago and was never repeated: its lease is over.
    await begin(abandoned, {}, 1);
    for (const key of [old, recent]) await env.db`select sl_complete_idempotent(${accountId}, ${key}, 200, '{}')`;
    const aged = `${IDEMPOTENCY_RETENTION_DAYS + 1} days`;
    await env.db`update idempotent_requests set created_at = now() - ${aged}::interval
                 where account_id = ${accountId} and idempotency_key in (${old}, ${stuck}, ${abandoned})`;
    // Still at work under a live lease, however old: left alone.
    await env.db`update idempotent_requests set lease_until = now() + interval '1 minute'
                 where account_id = ${accountId} and idempotency_key = ${stuck}`;
    const { idempotent_requests } = await purgeIdempotentRequests({ ctx: env.deps, input: { batchSize: 1 } });
    expect(idempotent_requests).toBeGreaterThanOrEqual(1);
    const left = await env.db<{ idempotency_key: string }>`
      select idempotency_key from idempotent_requests where account_id = ${accountId} and idempotency_key in (${old}, ${recent}, ${stuck}, ${abandoned})`;
    expect(left.map((r) => r.idempotency_key).sort()).toEqual([recent, stuck].sort());
    // Forgotten: the key starts a new request.
    expect(await begin(old, { other: true })).toEqual({ outcome: 'started' });
  });
});

describe('usage meter', () => {
  const usage = async (operation: string) => {
    const [row] = await env.db<{ n: string | null }>`
      select sum(calls)::text as n from usage_daily where account_id = ${accountId} and operation = ${operation}`;
    return Number(row?.n ?? 0);
  };

  it('adds many counts with one write, a moment later', async () => {
    const writes: string[] = [];
    const counting: Sql = Object.assign((strings: TemplateStringsArray, ...values: unknown[]) => {
      writes.push(strings.join('?'));
      return (env.db as unknown as (s: TemplateStringsArray, ...v: unknown[]) => unknown)(strings, ...values);
    }, env.db) as unknown as Sql;
    const tasks: Promise<unknown>[] = [];
    const meter = createUsageMeter({ db: counting, log: silentLogger, background: (_n, t) => tasks.push(t()), flushAfterMs: 10 });
    for (let i = 0; i < 50; i++) meter.count(accountId, 'meter-a');
    meter.count(accountId, 'meter-b', 3);
    expect(writes).toHaveLength(0);
    await Promise.all(tasks);
    expect(writes).toHaveLength(1);
    expect(await usage('meter-a')).toBe(50);
    expect(await usage('meter-b')).toBe(3);
  });

  it('keeps the counts when a write fails and adds them with the next one', async () => {
    let fail = true;
    const flaky = ((strings: TemplateStringsArray, ...values: unknown[]) => {
      if (fail) return Promise.reject(new Error('connection lost'));
      return (env.db as unknown as (s: TemplateStringsArray, ...v: unknown[]) => unknown)(strings, ...values);
    }) as unknown as Sql;
    const meter = createUsageMeter({ db: flaky, log: silentLogger, background: () => undefined, flushAfterMs: 10 });
    meter.count(accountId, 'meter-c', 4);
    await meter.flush();
    expect(await usage('meter-c')).toBe(0);
    fail = false;
    meter.count(accountId, 'meter-c', 1);
    await meter.flush();
    expect(await usage('meter-c')).toBe(5);
  });

  it('counts an authenticated call of a metered function, and the call itself', async () => {
    const before = await usage('api_call');
    const account = await seedDirectAccount(env.deps, 'Metered');
    const res = await env.app.request('http://localhost/identification-list?website_id=00000000-0000-4000-8000-000000000000', {
      headers: { 'x-access-key': account.key },
    });
    expect(res.status).toBe(404);
    await env.deps.usage.flush();
    const [row] = await env.db<{ n: string }>`
      select coalesce(sum(calls), 0)::text as n from usage_daily where account_id = ${account.account_id} and operation = 'api_call'`;
    expect(Number(row?.n)).toBe(1);
    expect(await usage('api_call')).toBe(before);
  });
});
