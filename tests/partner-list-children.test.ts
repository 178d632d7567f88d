import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { createChildVia, seedPartner, uniqueDomain } from './support/seed.ts';

let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;
let other: Awaited<ReturnType<typeof seedPartner>>;
const ids: Record<string, string> = {};

const list = (query: Record<string, string> = {}, key = partner.key) => call(env, 'partner-list-children', { key, query });

/** A child of the partner behind `key`, named `name`, created through the API (support/seed.ts). */
const childOf = (key: string, name: string, extra: Json = {}) => createChildVia(env, key, { name, domain: uniqueDomain(), ...extra });

beforeAll(async () => {
  env = await createTestEnv();
  partner = await seedPartner(env.deps, { quota: 100 });
  other = await seedPartner(env.deps, { quota: 100, name: 'Other partner' });
  ids.active = (await childOf(partner.key, 'Active child', { monthly_id_quota: 7 })).child.api_key_id;
  ids.suspended = (await childOf(partner.key, 'Suspended child')).child.api_key_id;
  ids.revoked = (await childOf(partner.key, 'Revoked child')).child.api_key_id;
  ids.unnamed = (await childOf(partner.key, 'Soon unnamed')).child.api_key_id;
  ids.foreign = (await childOf(other.key, 'Other’s child')).child.api_key_id;
  await env.db`update api_keys set status = 'suspended', suspended_reason = 'manual' where id = ${ids.suspended ?? ''}`;
  await env.db`update api_keys set status = 'revoked' where id = ${ids.revoked ?? ''}`;
  await env.db`update api_keys set name = null where id = ${ids.unnamed ?? ''}`;
});
afterAll(() => env.close());

describe('partner-list-children', () => {
  it('lists only active children by default, with every documented field', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const children = res.body.children as Json[];
    expect(children.map((c) => c.child_api_key_id)).toEqual([ids.active, ids.unnamed]);
    const first = children[0] ?? {};
    expect(Object.keys(first).sort()).toEqual(
      [
        'child_api_key_id',
        'child_user_id',
        'name',
        'domain',
        'tracking_script_id',
        'status',
        'created_at',
        'monthly_id_quota',
        'ids_used_this_period',
        'topup_balance',
        'current_period_end',
        'sub_status',
        'has_webhook',
      ].sort(),
    );
    expect(first).toMatchObject({
      name: 'Active child',
      status: 'active',
      monthly_id_quota: 7,
      ids_used_this_period: 0,
      topup_balance: 0,
      sub_status: 'active',
      has_webhook: false,
    });
    expect(first.domain).toMatch(/\.example\.com$/);
    expect(Number.isNaN(Date.parse(first.created_at as string))).toBe(false);
  });

  it('shows (unnamed) for a child without a name', async () => {
    const res = await list({ child_api_key_id: ids.unnamed ?? '' });
    expect((res.body.children as Json[])[0]?.name).toBe('(unnamed)');
  });

  it('include_inactive=true adds suspended and revoked children', async () => {
    const res = await list({ include_inactive: 'true' });
    const children = res.body.children as Json[];
    expect(children.map((c) => c.child_api_key_id)).toEqual([ids.active, ids.suspended, ids.revoked, ids.unnamed]);
    expect(children.map((c) => c.status)).toEqual(['active', 'suspended', 'revoked', 'active']);
    expect((await list({ include_inactive: 'false' })).body.children).toHaveLength(2);
  });

  it('looks up a single child by child_api_key_id', async () => {
    const res = await list({ child_api_key_id: ids.active ?? '' });
    expect((res.body.children as Json[]).map((c) => c.child_api_key_id)).toEqual([ids.active]);
  });

  it('single-child lookup of an inactive child needs include_inactive', async () => {
    expect((await list({ child_api_key_id: ids.revoked ?? '' })).body.children).toEqual([]);
    const res = await list({ child_api_key_id: ids.revoked ?? '', include_inactive: 'true' });
    expect((res.body.children as Json[]).map((c) => c.status)).toEqual(['revoked']);
  });

  it('returns an empty list for an unknown id and for another partner’s child', async () => {
    expect((await list({ child_api_key_id: '00000000-0000-4000-8000-000000000000' })).body).toEqual({ success: true, children: [] });
    expect((await list({ child_api_key_id: ids.foreign ?? '' })).body).toEqual({ success: true, children: [] });
  });

  it('never shows another partner’s children', async () => {
    const res = await list({ include_inactive: 'true' }, other.key);
    expect((res.body.children as Json[]).map((c) => c.child_api_key_id)).toEqual([ids.foreign]);
  });

  it('shows domain and tracking_script_id as null when the child has no active website', async () => {
    const c = await childOf(partner.key, 'No site');
    await env.db`update websites set status = 'inactive' where api_key_id = ${c.child.api_key_id}`;
    const res = await list({ child_api_key_id: c.child.api_key_id });
    expect((res.body.children as Json[])[0]).toMatchObject({ domain: null, tracking_script_id: null });
  });

  it('reports has_webhook', async () => {
    const [row] = await env.db<{ id: string }>`
      update api_keys set webhook_url = 'https://hooks.example.com/x', webhook_secret_sealed = 'v1.a.b'
      where id = ${ids.active ?? ''} returning id`;
    const res = await list({ child_api_key_id: row?.id ?? '' });
    expect((res.body.children as Json[])[0]?.has_webhook).toBe(true);
  });

  describe('pages (addition to the spec: limit and offset)', () => {
    it('without limit or offset returns every child and no next_offset, as the spec describes', async () => {
      const res = await list({ include_inactive: 'true' });
      expect(res.body).not.toHaveProperty('next_offset');
      expect((res.body.children as Json[]).length).toBeGreaterThanOrEqual(4);
    });

    it('walks every child exactly once, oldest first, ending with next_offset null', async () => {
      const all = ((await list({ include_inactive: 'true' })).body.children as Json[]).map((c) => c.child_api_key_id);
      const seen: unknown[] = [];
      let offset: number | null = 0;
      while (offset !== null) {
        const res = await list({ include_inactive: 'true', limit: '2', offset: String(offset) });
        expect(res.status).toBe(200);
        const page = res.body.children as Json[];
        expect(page.length).toBeLessThanOrEqual(2);
        seen.push(...page.map((c) => c.child_api_key_id));
        offset = res.body.next_offset as number | null;
      }
      expect(seen).toEqual(all);
    });

    it('an offset past the end is an empty last page', async () => {
      expect((await list({ limit: '10', offset: '1000' })).body).toEqual({ success: true, children: [], next_offset: null });
    });

    it('offset alone skips without limiting', async () => {
      const all = ((await list({ include_inactive: 'true' })).body.children as Json[]).map((c) => c.child_api_key_id);
      const rest = await list({ include_inactive: 'true', offset: '1' });
      expect((rest.body.children as Json[]).map((c) => c.child_api_key_id)).toEqual(all.slice(1));
    });
  });

  it.each([
    ['child_api_key_id is not a uuid', { child_api_key_id: 'abc' }, /child_api_key_id.*uuid/],
    ['include_inactive is not a boolean', { include_inactive: 'yes' }, /include_inactive.*true or false/],
    ['limit is 0', { limit: '0' }, /limit: must be between 1 and 500/],
    ['limit is over 500', { limit: '501' }, /limit: must be between 1 and 500/],
    ['limit is not a number', { limit: 'ten' }, /limit: must be a number/],
    ['offset is negative', { offset: '-1' }, /offset: must be 0 or more/],
    ['offset is fractional', { offset: '1.5' }, /offset: must be a whole number/],
  ])('400 when %s', async (_l, query, message) => {
    const res = await list(query);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false });
    expect(res.body.error).toMatch(message);
  });
});
