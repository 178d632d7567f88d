import { randomUUID } from 'node:crypto';
import { AppError } from '@sightline/core';
import { runOperatorCommand } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { rejection } from './support/rejection.ts';
import { seedDirectAccount } from './support/seed.ts';

/** The operator's side of ICPs: products made for an account, and the plan that limits its ICPs. */
let env: TestEnv;
let accountId: string;
beforeAll(async () => {
  env = await createTestEnv();
  accountId = (await seedDirectAccount(env.deps)).account_id;
});
afterAll(() => env.close());

const refusal = (p: Promise<unknown>) => rejection(p, AppError);

describe('create-product', () => {
  it('makes a product of the account and answers its product_id with the product', async () => {
    const out = await runOperatorCommand(env.deps, 'create-product', {
      'account-id': accountId,
      name: 'Operator product',
      url: 'https://operator.example.com',
      description: 'Made from the command line',
    });
    expect(out).toEqual({
      product_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      account_id: accountId,
      id: (out as { product_id: string }).product_id,
      name: 'Operator product',
      url: 'https://operator.example.com',
      description: 'Made from the command line',
      value_propositions: [],
      target_customers: [],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const [row] = await env.db<{ account_id: string }>`select account_id from products where id = ${(out as { product_id: string }).product_id}`;
    expect(row?.account_id).toBe(accountId);
    const bare = (await runOperatorCommand(env.deps, 'create-product', { 'account-id': accountId, name: 'Bare' })) as {
      url: null;
      description: null;
    };
    expect(bare).toMatchObject({ url: null, description: null });
  });

  it('refuses an unknown account (404), a missing name, a bad URL and unknown flags (400)', async () => {
    expect((await refusal(runOperatorCommand(env.deps, 'create-product', { 'account-id': randomUUID(), name: 'P' }))).status).toBe(404);
    const noName = await refusal(runOperatorCommand(env.deps, 'create-product', { 'account-id': accountId }));
    expect(noName.status).toBe(400);
    expect(noName.message).toMatch(/--name is required[\s\S]*usage: npm run admin -- create-product/);
    const badUrl = await refusal(runOperatorCommand(env.deps, 'create-product', { 'account-id': accountId, name: 'P', url: 'operator.example.com' }));
    expect(badUrl.status).toBe(400);
    expect(badUrl.message).toMatch(/url: must be an http\(s\) URL/);
    expect((await refusal(runOperatorCommand(env.deps, 'create-product', { 'account-id': 'nope', name: 'P' }))).message).toMatch(
      /--account-id must be a uuid/,
    );
    expect((await refusal(runOperatorCommand(env.deps, 'create-product', { 'account-id': accountId, name: 'P', colour: 'red' }))).status).toBe(400);
  });
});

describe('set-plan', () => {
  it('sets the plan and answers its ICP limit', async () => {
    for (const [plan, limit] of [
      ['starter', 3],
      ['growth', 6],
      ['pro', null],
      ['free', 1],
    ] as const) {
      expect(await runOperatorCommand(env.deps, 'set-plan', { 'account-id': accountId, plan })).toEqual({
        account_id: accountId,
        plan,
        icp_limit: limit,
        icp_count: 0,
      });
      const [row] = await env.db<{ plan: string }>`select plan from accounts where id = ${accountId}`;
      expect(row?.plan).toBe(plan);
    }
  });

  it('refuses an unknown account (404) and an unknown plan (400)', async () => {
    expect((await refusal(runOperatorCommand(env.deps, 'set-plan', { 'account-id': randomUUID(), plan: 'pro' }))).status).toBe(404);
    const bad = await refusal(runOperatorCommand(env.deps, 'set-plan', { 'account-id': accountId, plan: 'enterprise' }));
    expect(bad.status).toBe(400);
    expect(bad.message).toMatch(/--plan must be free, starter, growth or pro/);
    expect((await refusal(runOperatorCommand(env.deps, 'set-plan', { 'account-id': accountId }))).status).toBe(400);
  });
});
