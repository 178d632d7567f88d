import { randomUUID } from 'node:crypto';
import { type AiEngine, builtinEngine, ICP_FIELD_NAMES } from '@sightline/core';
import { runOperatorCommand } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IcpListResponse, IcpResponse, ProductListResponse, ProductResponse } from '../functions/api-icp-action/route.ts';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { createIcpVia, type IcpAccount, icpAction, icpCount, icpStep, seedIcpAccount } from './support/icps.ts';
import { seedConnectedUser, userHeaders } from './support/users.ts';
import { until } from './support/wait.ts';

/**
 * api-icp-action: products and ICPs of the account of the key, acted on by a connected user, each
 * mutating action idempotent under x-idempotency-key. Generation runs off the request (the built-in
 * engine here, kicked after the create); env.settle() waits for it.
 */
let env: TestEnv;
let a: IcpAccount;
let b: IcpAccount;

beforeAll(async () => {
  env = await createTestEnv();
  a = await seedIcpAccount(env);
  b = await seedIcpAccount(env);
});
afterAll(() => env.close());

const ICP_ID = /^[0-9a-f-]{36}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** An ICP of `who` that generation has finished, in workflow_status generated. */
async function generatedIcp(who: IcpAccount, fields: Json = {}): Promise<string> {
  const icp = await createIcpVia(env, who, fields);
  await env.settle();
  const [row] = await env.db<{ workflow_status: string }>`select workflow_status from icps where id = ${String(icp.id)}`;
  expect(row?.workflow_status).toBe('generated');
  return String(icp.id);
}

/** api-icp-action as the client sees it: the status and the body's text (a repeat must answer the same bytes). */
async function rawIcpAction(who: IcpAccount, body: Json, key: string) {
  const res = await env.app.request('http://localhost/api-icp-action', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-access-key': who.key, ...userHeaders(who.user_id, key) },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

describe('products', () => {
  it('create_product answers 201 with the product; update_product changes only what it names; list_products lists them oldest first', async () => {
    const created = await icpAction(env, a, {
      action: 'create_product',
      name: 'Second product',
      url: 'http://second.example.com/p',
      description: 'A second thing to sell',
      value_propositions: ['Faster'],
    });
    expect(created.status).toBe(201);
    const product = ProductResponse.parse(created.body);
    expect(product).toEqual({
      success: true,
      id: expect.stringMatching(ICP_ID),
      name: 'Second product',
      url: 'http://second.example.com/p',
      description: 'A second thing to sell',
      value_propositions: ['Faster'],
      target_customers: [],
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });

    const updated = await icpAction(env, a, { action: 'update_product', product_id: product.id, url: null, target_customers: ['Agencies'] });
    expect(updated.status).toBe(200);
    expect(ProductResponse.parse(updated.body)).toMatchObject({
      name: 'Second product',
      url: null,
      description: 'A second thing to sell',
      value_propositions: ['Faster'],
      target_customers: ['Agencies'],
    });

    const list = await icpAction(env, a, { action: 'list_products' });
    expect(list.status).toBe(200);
    const ids = ProductListResponse.parse(list.body).data.map((p) => p.id);
    expect(ids).toEqual([a.product_id, product.id]);
    // Another account sees only its own.
    expect(ProductListResponse.parse((await icpAction(env, b, { action: 'list_products' })).body).data.map((p) => p.id)).toEqual([b.product_id]);
  });

  it('refuses bad product fields with a 400 naming the field', async () => {
    const bad: Json[] = [
      { action: 'create_product' },
      { action: 'create_product', name: '' },
      { action: 'create_product', name: 'x'.repeat(201) },
      { action: 'create_product', name: 'P', url: 'ftp://example.com' },
      { action: 'create_product', name: 'P', url: `https://example.com/${'x'.repeat(2048)}` },
      { action: 'create_product', name: 'P', description: 'x'.repeat(4001) },
      { action: 'create_product', name: 'P', value_propositions: Array.from({ length: 21 }, (_, i) => `v${i}`) },
      { action: 'create_product', name: 'P', target_customers: ['x'.repeat(301)] },
      { action: 'create_product', name: 'P', colour: 'blue' },
      { action: 'update_product', product_id: a.product_id },
      { action: 'update_product', product_id: 'not-a-uuid', name: 'N' },
      { action: 'update_product', name: 'N' },
    ];
    for (const body of bad) {
      const res = await icpAction(env, a, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: expect.any(String) });
    }
    const missing = await icpAction(env, a, { action: 'create_product' });
    expect(missing.body.error).toMatch(/name is required/);
  });

  it('update_product: another account’s product is a 403, an unknown one a 404', async () => {
    expect((await icpAction(env, a, { action: 'update_product', product_id: b.product_id, name: 'Mine now' })).status).toBe(403);
    expect((await icpAction(env, a, { action: 'update_product', product_id: randomUUID(), name: 'Who' })).status).toBe(404);
    const [p] = await env.db<{ name: string }>`select name from products where id = ${b.product_id}`;
    expect(p?.name).toBe('Pipeline Radar');
  });
});

describe('create_icp and list_icps', () => {
  it('answers 201 with the ICP, generating and pending review; generation fills only what the caller left out', async () => {
    const res = await icpAction(env, a, {
      action: 'create_icp',
      product_id: a.product_id,
      name: 'US revenue leaders',
      job_titles: ['VP of Sales'],
      company_characteristics: { countries: ['US'], revenue_range: '$10M-$50M' },
    });
    expect(res.status).toBe(201);
    const icp = IcpResponse.parse(res.body);
    expect(res.body).toEqual({
      success: true,
      id: expect.stringMatching(ICP_ID),
      name: 'US revenue leaders',
      description: '',
      product_id: a.product_id,
      job_titles: ['VP of Sales'],
      pain_points: [],
      value_drivers: [],
      industry_focus: [],
      company_characteristics: { countries: ['US'], revenue_range: '$10M-$50M' },
      workflow_status: 'generating',
      review_status: 'pending_review',
      qualify_threshold: 70,
      generated_by: null,
      failure_reason: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });

    await env.settle();
    const listed = IcpListResponse.parse((await icpAction(env, a, { action: 'list_icps' })).body).data.find((i) => i.id === icp.id);
    expect(listed).toMatchObject({
      name: 'US revenue leaders',
      job_titles: ['VP of Sales'],
      company_characteristics: { countries: ['US'], revenue_range: '$10M-$50M' },
      workflow_status: 'generated',
      review_status: 'pending_review',
      generated_by: 'builtin',
      failure_reason: null,
    });
    expect(listed?.description.length).toBeGreaterThan(0);
    expect(listed?.pain_points.length).toBeGreaterThan(0);
  });

  it('takes a qualify_threshold from 0 to 100 and refuses anything else', async () => {
    const icp = await createIcpVia(env, a, { qualify_threshold: 0 });
    expect(icp.qualify_threshold).toBe(0);
    for (const t of [-1, 101, 70.5, '70', null]) {
      const res = await icpAction(env, a, { action: 'create_icp', product_id: a.product_id, qualify_threshold: t });
      expect(res.status, String(t)).toBe(400);
      expect(res.body.error).toMatch(/qualify_threshold/);
    }
  });

  it('refuses a missing or malformed field with a 400, an unknown product with a 404, another account’s with a 403', async () => {
    const before = await icpCount(env, a.account_id);
    const bad: Json[] = [
      { action: 'create_icp' },
      { action: 'create_icp', product_id: 'nope' },
      { action: 'create_icp', product_id: a.product_id, name: '' },
      { action: 'create_icp', product_id: a.product_id, job_titles: 'VP of Sales' },
      { action: 'create_icp', product_id: a.product_id, job_titles: Array.from({ length: 21 }, (_, i) => `t${i}`) },
      { action: 'create_icp', product_id: a.product_id, company_characteristics: { countries: ['usa'] } },
      { action: 'create_icp', product_id: a.product_id, company_characteristics: 'big' },
      // Other attributes are texts, numbers, flags or flat lists: nothing nests (a deep nest once crashed the fingerprint).
      { action: 'create_icp', product_id: a.product_id, company_characteristics: { funding: { stage: 'seed' } } },
      { action: 'create_icp', product_id: a.product_id, icp_id: randomUUID() },
    ];
    for (const body of bad) {
      const res = await icpAction(env, a, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ success: false });
    }
    // A deep nest (as raw text: serialising it here would overflow this process's stack) is a 400 too, not a 500.
    const deep = await call(env, '/api-icp-action', {
      key: a.key,
      method: 'POST',
      rawBody: `{"action":"create_icp","product_id":"${a.product_id}","company_characteristics":{"deep":${'['.repeat(5000)}${']'.repeat(5000)}}}`,
      headers: { 'content-type': 'application/json', ...userHeaders(a.user_id, randomUUID()) },
    });
    expect(deep.status).toBe(400);
    expect((await icpAction(env, a, { action: 'create_icp' })).body.error).toMatch(/product_id is required/);
    const unknown = await icpAction(env, a, { action: 'create_icp', product_id: randomUUID() });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatch(/no such product/);
    const other = await icpAction(env, a, { action: 'create_icp', product_id: b.product_id });
    expect(other.status).toBe(403);
    expect(other.body.error).toMatch(/another account/);
    expect(await icpCount(env, a.account_id)).toBe(before);
  });

  it('answers 400 naming the allowed actions for an unknown or missing action', async () => {
    for (const body of [{ action: 'create_icps' }, {}, { action: 7 }]) {
      const res = await icpAction(env, a, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/^action: must be one of create_icp, list_icps, approve_icp, .*list_products$/);
    }
  });

  it('list_icps lists only the account’s ICPs, oldest first, and takes only action', async () => {
    const own = await icpAction(env, b, { action: 'list_icps' });
    expect(own.status).toBe(200);
    const before = IcpListResponse.parse(own.body).data.length;
    const first = await createIcpVia(env, b);
    const second = await createIcpVia(env, b);
    const ids = IcpListResponse.parse((await icpAction(env, b, { action: 'list_icps' })).body).data.map((i) => i.id);
    expect(ids.slice(before)).toEqual([first.id, second.id]);
    const ofA = IcpListResponse.parse((await icpAction(env, a, { action: 'list_icps' })).body).data.map((i) => i.id);
    expect(ofA).not.toContain(first.id);
    expect((await icpAction(env, b, { action: 'list_icps', product_id: b.product_id })).status).toBe(400);
  });
});

describe('review and activation', () => {
  it('walks generated → approved → active → paused → active, each answering the ICP', async () => {
    const id = await generatedIcp(a);
    expect(await icpStep(env, a, 'approve_icp', id)).toMatchObject({ workflow_status: 'generated', review_status: 'approved' });
    expect(await icpStep(env, a, 'activate_icp', id)).toMatchObject({ workflow_status: 'active', review_status: 'approved' });
    expect(await icpStep(env, a, 'pause_icp', id)).toMatchObject({ workflow_status: 'paused', review_status: 'approved' });
    const again = await icpStep(env, a, 'activate_icp', id);
    expect(IcpResponse.parse(again)).toMatchObject({ id, workflow_status: 'active' });
  });

  it('asking for the state the ICP is in changes nothing and answers it', async () => {
    const id = await generatedIcp(a);
    const approved = await icpStep(env, a, 'approve_icp', id);
    const twice = await icpStep(env, a, 'approve_icp', id);
    expect(twice).toEqual(approved);
    await icpStep(env, a, 'activate_icp', id);
    expect(await icpStep(env, a, 'activate_icp', id)).toMatchObject({ workflow_status: 'active' });
    await icpStep(env, a, 'pause_icp', id);
    expect(await icpStep(env, a, 'pause_icp', id)).toMatchObject({ workflow_status: 'paused' });
    const rejected = await icpStep(env, a, 'reject_icp', id);
    expect(rejected).toMatchObject({ workflow_status: 'paused', review_status: 'rejected' });
    expect(await icpStep(env, a, 'reject_icp', id)).toEqual(rejected);
  });

  it('refuses transitions the table does not allow with a 409 naming the state, and changes nothing', async () => {
    // An engine that answers only when let go, so the ICP stays generating meanwhile.
    const engine = env.deps.ai;
    let letGo = () => {};
    const held = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    env.deps.ai = { ...engine, draftIcp: async (input) => held.then(() => engine.draftIcp(input)) };
    const refuse = async (action: string, id: unknown, message: RegExp) => {
      // What the API shows (the claim of a held generation may touch its lease columns meanwhile).
      const [before] = await env.db<{ row: string }>`select sl_icp_json(i)::text as row from icps i where id = ${String(id)}`;
      const res = await icpAction(env, a, { action, icp_id: id });
      expect(res.status, `${action}: ${JSON.stringify(res.body)}`).toBe(409);
      expect(res.body.error).toMatch(message);
      const [after] = await env.db<{ row: string }>`select sl_icp_json(i)::text as row from icps i where id = ${String(id)}`;
      expect(after).toEqual(before);
    };
    try {
      const generating = await createIcpVia(env, a);
      await refuse('approve_icp', generating.id, /cannot approve an ICP that is generating/);
      await refuse('reject_icp', generating.id, /cannot reject an ICP that is generating/);
      await refuse('activate_icp', generating.id, /cannot activate an ICP that is generating/);
      await refuse('pause_icp', generating.id, /only an active ICP can be paused/);
      await refuse('regenerate_icp', generating.id, /cannot regenerate an ICP that is generating/);
    } finally {
      letGo();
      await env.settle();
      env.deps.ai = engine;
    }

    const pending = await generatedIcp(a);
    await refuse('activate_icp', pending, /review is pending_review: approve it first/);
    await refuse('pause_icp', pending, /cannot pause an ICP that is generated/);

    await icpStep(env, a, 'approve_icp', pending);
    await refuse('regenerate_icp', pending, /cannot regenerate an ICP that is generated and approved/);
    await icpStep(env, a, 'activate_icp', pending);
    await refuse('reject_icp', pending, /cannot reject an active ICP: pause it first/);
    await refuse('regenerate_icp', pending, /cannot regenerate an ICP that is active/);

    const rejected = await generatedIcp(a);
    await icpStep(env, a, 'reject_icp', rejected);
    await refuse('activate_icp', rejected, /review is rejected: approve it first/);
  });

  it('regenerate_icp sends a rejected ICP back to generating and pending review, and it is generated again', async () => {
    const id = await generatedIcp(a);
    await icpStep(env, a, 'reject_icp', id);
    const regenerating = await icpStep(env, a, 'regenerate_icp', id);
    expect(regenerating).toMatchObject({ workflow_status: 'generating', review_status: 'pending_review' });
    await env.settle();
    const [row] = await env.db<{ workflow_status: string; review_status: string }>`select workflow_status, review_status from icps where id = ${id}`;
    expect(row).toEqual({ workflow_status: 'generated', review_status: 'pending_review' });
  });

  it('delete_icp deletes the ICP; an unknown ICP is a 404, another account’s a 403', async () => {
    const id = await generatedIcp(a);
    const res = await icpAction(env, a, { action: 'delete_icp', icp_id: id });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, icp_id: id, deleted: true });
    expect((await icpAction(env, a, { action: 'delete_icp', icp_id: id })).status).toBe(404);

    const theirs = await generatedIcp(b);
    for (const action of ['approve_icp', 'reject_icp', 'activate_icp', 'pause_icp', 'regenerate_icp', 'delete_icp']) {
      const other = await icpAction(env, a, { action, icp_id: theirs });
      expect(other.status, action).toBe(403);
      expect(other.body.error).toMatch(/another account/);
      const unknown = await icpAction(env, a, { action, icp_id: randomUUID() });
      expect(unknown.status, action).toBe(404);
      expect((await icpAction(env, a, { action })).status, action).toBe(400);
      expect((await icpAction(env, a, { action, icp_id: 'x' })).status, action).toBe(400);
    }
    const [row] = await env.db<{ workflow_status: string }>`select workflow_status from icps where id = ${theirs}`;
    expect(row?.workflow_status).toBe('generated');
  });
});

describe('plan limits', () => {
  it('refuses the ICP over the plan’s limit with a 403 naming the plan and its limit; a delete frees a place; set-plan raises it', async () => {
    const free = await seedIcpAccount(env, { plan: 'free' });
    const first = await createIcpVia(env, free);
    const over = await icpAction(env, free, { action: 'create_icp', product_id: free.product_id });
    expect(over.status).toBe(403);
    expect(over.body).toEqual({
      success: false,
      error: 'the free plan allows 1 ICP; this account has 1: delete one or upgrade the plan',
      code: 'forbidden',
      plan: 'free',
      icp_limit: 1,
      icp_count: 1,
    });
    await icpAction(env, free, { action: 'delete_icp', icp_id: first.id });
    await createIcpVia(env, free);

    expect(await runOperatorCommand(env.deps, 'set-plan', { 'account-id': free.account_id, plan: 'starter' })).toEqual({
      account_id: free.account_id,
      plan: 'starter',
      icp_limit: 3,
      icp_count: 1,
    });
    await createIcpVia(env, free);
    await createIcpVia(env, free);
    const starter = await icpAction(env, free, { action: 'create_icp', product_id: free.product_id });
    expect(starter.status).toBe(403);
    expect(starter.body).toMatchObject({
      error: expect.stringMatching(/^the starter plan allows 3 ICPs/),
      plan: 'starter',
      icp_limit: 3,
      icp_count: 3,
    });

    await runOperatorCommand(env.deps, 'set-plan', { 'account-id': free.account_id, plan: 'growth' });
    for (let i = 0; i < 3; i++) await createIcpVia(env, free);
    expect((await icpAction(env, free, { action: 'create_icp', product_id: free.product_id })).body).toMatchObject({ plan: 'growth', icp_limit: 6 });

    // Down to free: the six stay, nothing new until the count is under the limit.
    await runOperatorCommand(env.deps, 'set-plan', { 'account-id': free.account_id, plan: 'free' });
    expect(await icpCount(env, free.account_id)).toBe(6);
    expect((await icpAction(env, free, { action: 'create_icp', product_id: free.product_id })).body).toMatchObject({ icp_limit: 1, icp_count: 6 });

    await runOperatorCommand(env.deps, 'set-plan', { 'account-id': free.account_id, plan: 'pro' });
    for (let i = 0; i < 4; i++) await createIcpVia(env, free);
    expect(await icpCount(env, free.account_id)).toBe(10);
    await env.settle();
  });
});

describe('the connected user and the headers', () => {
  it('answers 403 for a user not connected to the key’s account, before any work', async () => {
    const before = await icpCount(env, a.account_id);
    const strangers = [randomUUID(), b.user_id];
    for (const userId of strangers) {
      const res = await call(env, '/api-icp-action', {
        key: a.key,
        body: { action: 'create_icp', product_id: a.product_id },
        headers: userHeaders(userId, randomUUID()),
      });
      expect(res.status).toBe(403);
      expect(res.body.error).toMatch(/x-user-id is not a user connected/);
    }
    const disconnected = await seedConnectedUser(env.db, a.account_id);
    await env.db`update connected_users set status = 'disconnected' where id = ${disconnected.user_id}`;
    expect((await icpAction(env, { key: a.key, user_id: disconnected.user_id }, { action: 'list_icps' })).status).toBe(403);
    expect(await icpCount(env, a.account_id)).toBe(before);
  });

  it('answers 400 without x-idempotency-key or x-user-id, or with one that is not a UUID', async () => {
    const noKey = await icpAction(env, a, { action: 'list_icps' }, null);
    expect(noKey.status).toBe(400);
    expect(noKey.body.error).toMatch(/x-idempotency-key header is required/);
    const badKey = await call(env, '/api-icp-action', { key: a.key, body: { action: 'list_icps' }, headers: userHeaders(a.user_id, 'abc') });
    expect(badKey.status).toBe(400);
    expect(badKey.body.error).toMatch(/x-idempotency-key/);
    const noUser = await call(env, '/api-icp-action', { key: a.key, body: { action: 'list_icps' }, headers: { 'x-idempotency-key': randomUUID() } });
    expect(noUser.status).toBe(400);
    expect(noUser.body.error).toMatch(/x-user-id header is required/);
    expect((await call(env, '/api-icp-action', { body: { action: 'list_icps' }, headers: userHeaders(a.user_id, randomUUID()) })).status).toBe(401);
  });
});

describe('x-idempotency-key', () => {
  it('a repeat of a create answers the original status and body and creates nothing', async () => {
    const key = randomUUID();
    const body = { action: 'create_icp', product_id: a.product_id, name: 'Once only' };
    const first = await icpAction(env, a, body, key);
    expect(first.status).toBe(201);
    const count = await icpCount(env, a.account_id);
    await env.settle(); // generation changes the ICP; the repeat still answers the original
    const again = await icpAction(env, a, body, key);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.body.workflow_status).toBe('generating');
    expect(await icpCount(env, a.account_id)).toBe(count);
    // The same JSON with its keys in another order is the same request.
    const reordered = await icpAction(env, a, { name: 'Once only', product_id: a.product_id, action: 'create_icp' }, key);
    expect(reordered.body).toEqual(first.body);
  });

  it('a repeat of a state action or a product action answers the stored answer byte for byte', async () => {
    const id = await generatedIcp(a);
    const key = randomUUID();
    const approve = await icpAction(env, a, { action: 'approve_icp', icp_id: id }, key);
    await icpStep(env, a, 'reject_icp', id);
    const again = await env.app.request('http://localhost/api-icp-action', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': a.key, ...userHeaders(a.user_id, key) },
      body: JSON.stringify({ action: 'approve_icp', icp_id: id }),
    });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(JSON.stringify(approve.body));
    const [row] = await env.db<{ review_status: string }>`select review_status from icps where id = ${id}`;
    expect(row?.review_status).toBe('rejected'); // the repeat did not approve it again

    const productKey = randomUUID();
    const made = await icpAction(env, a, { action: 'create_product', name: 'Idempotent product' }, productKey);
    const remade = await icpAction(env, a, { action: 'create_product', name: 'Idempotent product' }, productKey);
    expect(remade.status).toBe(201);
    expect(remade.body).toEqual(made.body);
    const [n] = await env.db<{ n: number }>`select count(*)::int as n from products where name = 'Idempotent product'`;
    expect(n?.n).toBe(1);
  });

  it('a repeat of create_icp answers the first answer’s bytes, as every other action’s repeat does', async () => {
    const key = randomUUID();
    const body = { action: 'create_icp', product_id: b.product_id, name: 'Byte for byte', job_titles: ['VP of Sales'] };
    const first = await rawIcpAction(b, body, key);
    expect(first.status).toBe(201);
    await env.settle(); // generation changes the ICP; the repeat still answers the original
    const again = await rawIcpAction(b, body, key);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    IcpResponse.strict().parse(JSON.parse(again.text));
  });

  it('the same key with a different request is a 422, and changes nothing', async () => {
    const key = randomUUID();
    await createIcpVia(env, a); // a fresh key, not this one
    expect((await icpAction(env, a, { action: 'create_icp', product_id: a.product_id, name: 'First' }, key)).status).toBe(201);
    const count = await icpCount(env, a.account_id);
    const other = await icpAction(env, a, { action: 'create_icp', product_id: a.product_id, name: 'Second' }, key);
    expect(other.status).toBe(422);
    expect(other.body.error).toMatch(/already used for a different request/);
    const otherAction = await icpAction(env, a, { action: 'create_product', name: 'First' }, key);
    expect(otherAction.status).toBe(422);
    // Another connected user of the same account with the same key and body is another request too.
    const colleague = await seedConnectedUser(env.db, a.account_id);
    const byColleague = await icpAction(
      env,
      { key: a.key, user_id: colleague.user_id },
      { action: 'create_icp', product_id: a.product_id, name: 'First' },
      key,
    );
    expect(byColleague.status).toBe(422);
    expect(await icpCount(env, a.account_id)).toBe(count);
    await env.settle();
  });

  it('a key given back after a refusal can be used again for the corrected request', async () => {
    const key = randomUUID();
    const refused = await icpAction(env, a, { action: 'create_icp', product_id: randomUUID() }, key);
    expect(refused.status).toBe(404);
    const [stored] = await env.db<{ n: number }>`select count(*)::int as n from idempotent_requests where idempotency_key = ${key}`;
    expect(stored?.n).toBe(0);
    expect((await icpAction(env, a, { action: 'create_icp', product_id: a.product_id }, key)).status).toBe(201);

    const id = await generatedIcp(a);
    const stepKey = randomUUID();
    expect((await icpAction(env, a, { action: 'activate_icp', icp_id: id }, stepKey)).status).toBe(409);
    expect((await icpAction(env, a, { action: 'approve_icp', icp_id: id }, stepKey)).status).toBe(200);
  });

  it('a repeat while the first is still at work answers 202 processing', async () => {
    const key = randomUUID();
    const body = { action: 'create_product', name: 'Slow product' };
    expect((await icpAction(env, a, body, key)).status).toBe(201);
    // Hold the key as a first request still at work holds it: in progress, its lease running.
    await env.db`update idempotent_requests set state = 'processing', response_status = null, response_body = null, completed_at = null,
                   lease_until = now() + interval '1 minute' where idempotency_key = ${key}`;
    const processing = await icpAction(env, a, body, key);
    expect(processing.status).toBe(202);
    expect(processing.body).toEqual({ success: true, status: 'processing', message: expect.stringMatching(/still in progress/) });
  });

  it('reads do not touch the key store: a list repeats freshly under the same key', async () => {
    const key = randomUUID();
    const one = await icpAction(env, b, { action: 'list_icps' }, key);
    await createIcpVia(env, b);
    const two = await icpAction(env, b, { action: 'list_icps' }, key);
    expect((two.body.data as Json[]).length).toBe((one.body.data as Json[]).length + 1);
    const [stored] = await env.db<{ n: number }>`select count(*)::int as n from idempotent_requests where idempotency_key = ${key}`;
    expect(stored?.n).toBe(0);
    await env.settle();
  });
});

describe('ICP generations are limited per account', () => {
  /** docs/decisions/icp.md, "ICP generations per hour": create_icp that leaves fields to the engine and regenerate_icp. */
  const PER_HOUR = 20;

  /** The built-in engine, counting the drafts it is asked for. */
  function countingEngine() {
    const drafts: string[] = [];
    const engine: AiEngine = {
      ...builtinEngine,
      async draftIcp(input) {
        drafts.push(input.product.name);
        return builtinEngine.draftIcp(input);
      },
    };
    return { engine, drafts };
  }

  it('regenerate_icp beyond the hourly allowance is a 429 with Retry-After; the engine is not asked and nothing changes', async () => {
    const who = await seedIcpAccount(env);
    const counting = countingEngine();
    const before = env.deps.ai;
    env.deps.ai = counting.engine;
    try {
      const id = await generatedIcp(who); // the create is the first generation
      const generated = async () =>
        (await env.db<{ workflow_status: string }>`select workflow_status from icps where id = ${id}`)[0]?.workflow_status === 'generated';
      for (let i = 1; i < PER_HOUR; i++) {
        await icpStep(env, who, 'regenerate_icp', id);
        await until('the regenerated ICP is generated', generated);
      }
      expect(counting.drafts).toHaveLength(PER_HOUR);
      const key = randomUUID();
      const refused = await icpAction(env, who, { action: 'regenerate_icp', icp_id: id }, key);
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({
        success: false,
        error: expect.stringMatching(/^this account started 20 ICP generations in the last hour, the most allowed; the next is possible in \d+ s$/),
        code: 'generation_limit',
      });
      const wait = Number(refused.headers.get('retry-after'));
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(3600);
      await env.settle();
      expect(counting.drafts).toHaveLength(PER_HOUR);
      const [row] = await env.db<{ workflow_status: string }>`select workflow_status from icps where id = ${id}`;
      expect(row?.workflow_status).toBe('generated');
      // Refused, so the key was given back.
      const [stored] = await env.db<{ n: number }>`select count(*)::int as n from idempotent_requests where idempotency_key = ${key}`;
      expect(stored?.n).toBe(0);

      // A create that leaves fields to the engine is refused the same way; one that gives every field asks no engine and goes through.
      const create = await icpAction(env, who, { action: 'create_icp', product_id: who.product_id, name: 'One more' });
      expect(create.status).toBe(429);
      expect(create.body.code).toBe('generation_limit');
      const complete = await icpAction(env, who, {
        action: 'create_icp',
        product_id: who.product_id,
        name: 'Complete',
        description: 'Given whole by the caller.',
        job_titles: ['VP of Sales'],
        pain_points: ['Unknown visitors'],
        value_drivers: ['Pipeline'],
        industry_focus: ['Computer Software'],
        company_characteristics: {},
      });
      expect(complete.status, JSON.stringify(complete.body)).toBe(201);
      // What sl_create_icp counts as every field given is the verb's list of them.
      const [def] = await env.db<{ src: string }>`select pg_get_functiondef('sl_create_icp(uuid, uuid, jsonb, integer, uuid)'::regprocedure) as src`;
      expect(def?.src).toContain(`p_fields ?& array[${ICP_FIELD_NAMES.map((n) => `'${n}'`).join(', ')}]`);
      await env.settle();
      expect(counting.drafts).toHaveLength(PER_HOUR);
      // Another account has its own allowance.
      expect((await icpAction(env, b, { action: 'create_icp', product_id: b.product_id })).status).toBe(201);
      await env.settle();
    } finally {
      env.deps.ai = before;
    }
  });
});
