import { authenticateKey, consumeIdentification } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { eventsOf } from './support/events.ts';
import { createChildVia, seedPartner } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';

let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;
let other: Awaited<ReturnType<typeof seedPartner>>;

beforeAll(async () => {
  env = await createTestEnv();
  partner = await seedPartner(env.deps, { quota: 1000, topup: 50 });
  other = await seedPartner(env.deps, { quota: 1000, name: 'Other' });
});
afterAll(() => env.close());

const release = (child: string, key = partner.key) => call(env, 'partner-release-child', { key, body: { child_api_key_id: child } });

describe('partner-release-child', () => {
  it('returns the key to the partner’s direct account, deletes subscription and phantom user, and credits the top-up back', async () => {
    const c = await createChildVia(env, partner.key, { monthly_id_quota: 10 });
    await call(env, 'partner-transfer-topup', { key: partner.key, body: { child_api_key_id: c.child.api_key_id, amount: 12 } });
    const [poolBefore] = await env.db<{ t: number }>`select topup_balance as t from pools where account_id = ${partner.account_id}`;
    const res = await release(c.child.api_key_id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, released_api_key_id: c.child.api_key_id, topup_returned: 12 });
    const [poolAfter] = await env.db<{ t: number }>`select topup_balance as t from pools where account_id = ${partner.account_id}`;
    expect(poolAfter?.t).toBe((poolBefore?.t ?? 0) + 12);

    const caller = await authenticateKey({ ctx: env.deps, input: { key: c.child.key } });
    expect(caller).toMatchObject({ accountId: partner.account_id, parentApiKeyId: null, status: 'active' });
    expect(await env.db`select 1 from child_subscriptions where api_key_id = ${c.child.api_key_id}`).toHaveLength(0);
    expect(await env.db`select 1 from accounts where id = ${c.child.child_user_id}`).toHaveLength(0);
    const [event] = (await eventsOf(env.db, c.child.api_key_id)).filter((e) => e.event === 'child.released');
    expect(event?.data).toEqual({ child_api_key_id: c.child.api_key_id, topup_returned: 12 });
    // Gone from the children list; the tracker keeps working as a direct tracker drawing on the pool.
    const list = await call(env, 'partner-list-children', { key: partner.key, query: { include_inactive: 'true' } });
    expect((list.body.children as Array<{ child_api_key_id: string }>).map((x) => x.child_api_key_id)).not.toContain(c.child.api_key_id);
    expect(await consumeIdentification({ ctx: env.deps, input: { apiKeyId: c.child.api_key_id } })).toMatchObject({
      outcome: 'consumed',
      pool_source: 'quota',
    });
  });

  it('can be adopted again after release', async () => {
    const c = await createChildVia(env, partner.key);
    await release(c.child.api_key_id);
    const res = await call(env, 'partner-adopt-existing-key', { key: partner.key, body: { api_key_id: c.child.api_key_id, name: 'Back' } });
    expect(res.status).toBe(200);
  });

  it('scopes the released key to its own websites in the same transaction: no connect link for the partner’s account from the next request on', async () => {
    const c = await createChildVia(env, partner.key);
    // As a child it acts on its own account, and this process now holds its key record in the auth cache.
    expect((await call(env, 'api-create-connect-link', { key: c.child.key, method: 'POST' })).status).toBe(201);
    expect((await release(c.child.api_key_id)).status).toBe(200);
    const [key] = await env.db<{ scope: string; account_id: string }>`select scope, account_id from api_keys where id = ${c.child.api_key_id}`;
    expect(key).toEqual({ scope: 'websites', account_id: partner.account_id });
    const before = await snapshot(env.db);
    const refused = await call(env, 'api-create-connect-link', { key: c.child.key, method: 'POST' });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('this key is scoped to its own websites and cannot act on the account');
    expect(await env.db`select 1 from connect_links where account_id = ${partner.account_id}`).toHaveLength(0);
    expect(await snapshot(env.db)).toEqual(before);
  });

  it('adopting the released key again gives back a child’s key, acting on its own new account', async () => {
    const c = await createChildVia(env, partner.key);
    await release(c.child.api_key_id);
    expect((await call(env, 'api-create-connect-link', { key: c.child.key, method: 'POST' })).status).toBe(403);
    const adopted = await call(env, 'partner-adopt-existing-key', { key: partner.key, body: { api_key_id: c.child.api_key_id, name: 'Back again' } });
    expect(adopted.status).toBe(200);
    const childUser = (adopted.body.child as { child_user_id: string }).child_user_id;
    const [key] = await env.db<{ scope: string; account_id: string }>`select scope, account_id from api_keys where id = ${c.child.api_key_id}`;
    expect(key).toEqual({ scope: 'account', account_id: childUser });
    const link = await call(env, 'api-create-connect-link', { key: c.child.key, method: 'POST' });
    expect(link.status).toBe(201);
    const [row] = await env.db<{ account_id: string }>`select account_id from connect_links where id = ${link.body.link_id as string}`;
    expect(row?.account_id).toBe(childUser);
    // And it reads its own website, as every child does.
    expect((await call(env, 'list-visitors', { key: c.child.key })).status).toBe(200);
  });

  it('reports topup_returned and succeeds even when the partner has no pool (the credit is lost)', async () => {
    const p = await seedPartner(env.deps, { quota: 10, topup: 5 });
    const c = await createChildVia(env, p.key);
    await call(env, 'partner-transfer-topup', { key: p.key, body: { child_api_key_id: c.child.api_key_id, amount: 5 } });
    await env.db`delete from pools where account_id = ${p.account_id}`;
    const res = await release(c.child.api_key_id, p.key);
    expect(res.status).toBe(200);
    expect(res.body.topup_returned).toBe(5);
  });

  it('403 for another partner’s child, 404 for unknown, 400 for a bad id — nothing changes', async () => {
    const theirs = await createChildVia(env, other.key);
    const before = await snapshot(env.db);
    expect((await release(theirs.child.api_key_id)).status).toBe(403);
    expect((await release('00000000-0000-4000-8000-000000000123')).status).toBe(404);
    expect((await release('x')).status).toBe(400);
    expect(await snapshot(env.db)).toEqual(before);
  });
});
