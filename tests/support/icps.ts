import { randomUUID } from 'node:crypto';
import { createProduct, type Sql, setPlan } from '@sightline/core';
import { expect } from 'vitest';
import { call, type Json, type TestEnv } from './app.ts';
import { seedDirectAccount } from './seed.ts';
import { seedConnectedUser, userHeaders } from './users.ts';

/** An account acting on ICPs: its key, a connected user, a product, and its plan. */
export interface IcpAccount {
  account_id: string;
  key: string;
  user_id: string;
  product_id: string;
  website_id: string;
  api_key_id: string;
}

export async function seedIcpAccount(env: TestEnv, opts: { plan?: 'free' | 'starter' | 'growth' | 'pro'; product?: Json } = {}): Promise<IcpAccount> {
  const a = await seedDirectAccount(env.deps, 'ICP account');
  const user = await seedConnectedUser(env.db, a.account_id);
  await setPlan({ ctx: env.deps, input: { accountId: a.account_id, plan: opts.plan ?? 'pro' } });
  const product = await createProduct({
    ctx: env.deps,
    input: {
      accountId: a.account_id,
      product: opts.product ?? {
        name: 'Pipeline Radar',
        url: 'https://pipeline-radar.example.com',
        description: 'Sales intelligence software that shows B2B SaaS sales teams which companies visit their website.',
        value_propositions: ['Know which accounts are in market'],
        target_customers: ['B2B SaaS companies with 50 to 500 employees'],
      },
    },
  });
  return { account_id: a.account_id, key: a.key, user_id: user.user_id, product_id: product.id, website_id: a.website_id, api_key_id: a.api_key_id };
}

/** One api-icp-action call as `who`, with a fresh x-idempotency-key unless one is given (null: none). */
export function icpAction(env: TestEnv, who: { key: string; user_id: string }, body: unknown, idempotencyKey: string | null = randomUUID()) {
  return call(env, '/api-icp-action', { key: who.key, body, headers: userHeaders(who.user_id, idempotencyKey ?? undefined) });
}

/** create_icp, answered 201; returns the ICP. */
export async function createIcpVia(env: TestEnv, who: IcpAccount, fields: Json = {}): Promise<Json> {
  const res = await icpAction(env, who, { action: 'create_icp', product_id: who.product_id, ...fields });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** A state action answered 200; returns the ICP. */
export async function icpStep(env: TestEnv, who: IcpAccount, action: string, icpId: unknown): Promise<Json> {
  const res = await icpAction(env, who, { action, icp_id: icpId });
  expect(res.status, `${action}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
}

export async function icpCount(env: TestEnv, accountId: string): Promise<number> {
  const [row] = await env.db<{ n: number }>`select count(*)::int as n from icps where account_id = ${accountId}`;
  return row?.n ?? 0;
}

/**
 * An active, approved ICP of the key's account, "US companies" (the built-in engine, any company in
 * the US), on a product of its own: for suites that need an identified visitor scored, not the ICP
 * workflow (proved in the icp-*.test.ts suites).
 */
export async function seedUsCompaniesIcp(db: Sql, apiKeyId: string): Promise<void> {
  const [owner] = await db<{ account_id: string }>`select account_id from api_keys where id = ${apiKeyId}`;
  if (!owner) throw new Error(`no key ${apiKeyId}`);
  await db`
    with product as (insert into products (account_id, name) values (${owner.account_id}, 'Visitor ID') returning id)
    insert into icps (account_id, product_id, name, description, workflow_status, review_status, engine, company_characteristics)
    select ${owner.account_id}, id, 'US companies', 'Companies in the US', 'active', 'approved', 'builtin', '{"countries": ["US"]}'::jsonb
    from product`;
}
