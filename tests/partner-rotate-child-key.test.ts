import { authenticateKey, isWellFormedApiKey } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { createChildVia, seedPartner } from './support/seed.ts';

let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;
let other: Awaited<ReturnType<typeof seedPartner>>;

beforeAll(async () => {
  env = await createTestEnv();
  partner = await seedPartner(env.deps, { quota: 1000 });
  other = await seedPartner(env.deps, { quota: 1000, name: 'Other' });
});
afterAll(() => env.close());

const rotate = (child: string, key = partner.key) => call(env, 'partner-rotate-child-key', { key, body: { child_api_key_id: child } });
const authStatus = async (key: string) =>
  authenticateKey({ ctx: env.deps, input: { key } }).then(
    () => 200,
    (e: { status?: number }) => e.status ?? 500,
  );

describe('partner-rotate-child-key', () => {
  it('replaces the secret, keeps the record id, and the old key answers 401 at once', async () => {
    const c = await createChildVia(env, partner.key);
    const res = await rotate(c.child.api_key_id);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['child_api_key_id', 'key', 'key_prefix', 'old_key_prefix', 'rotated_at', 'success']);
    const key = res.body.key as string;
    expect(isWellFormedApiKey(key)).toBe(true);
    expect(key).not.toBe(c.child.key);
    expect(res.body.key_prefix).toBe(key.slice(0, 11));
    expect(res.body.old_key_prefix).toBe(c.child.key.slice(0, 11));
    expect(res.body.child_api_key_id).toBe(c.child.api_key_id);
    expect(await authStatus(c.child.key)).toBe(401);
    const caller = await authenticateKey({ ctx: env.deps, input: { key } });
    expect(caller.apiKeyId).toBe(c.child.api_key_id);
    // References stay: the website and subscription still hang off the same key record.
    const listed = await call(env, 'partner-list-children', { key: partner.key, query: { child_api_key_id: c.child.api_key_id } });
    expect((listed.body.children as Json[])[0]?.tracking_script_id).toBe(c.website.tracking_script_id);
  });

  it('allows 10 rotations per child in 24 hours, then 429 with recent_rotations_24h and no change', async () => {
    const c = await createChildVia(env, partner.key);
    let last = c.child.key;
    for (let i = 0; i < 10; i++) {
      const res = await rotate(c.child.api_key_id);
      expect(res.status).toBe(200);
      last = res.body.key as string;
    }
    const refused = await rotate(c.child.api_key_id);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ success: false, code: 'rotation_limit', recent_rotations_24h: 10 });
    expect(refused.body.error).toMatch(/limit is 10/);
    expect(await authStatus(last)).toBe(200);
    // Another child is not affected by this child's count.
    const d = await createChildVia(env, partner.key);
    expect((await rotate(d.child.api_key_id)).status).toBe(200);
  });

  it('counts a rolling 24-hour window: rotations older than a day no longer count', async () => {
    const c = await createChildVia(env, partner.key);
    for (let i = 0; i < 10; i++) expect((await rotate(c.child.api_key_id)).status).toBe(200);
    expect((await rotate(c.child.api_key_id)).status).toBe(429);
    await env.db`update key_rotations set rotated_at = rotated_at - interval '24 hours 1 second'
                 where api_key_id = ${c.child.api_key_id}`;
    expect((await rotate(c.child.api_key_id)).status).toBe(200);
  });

  it('403 for another partner’s child (whose key keeps working), 404 for an unknown or direct key, 400 for a bad id', async () => {
    const theirs = await createChildVia(env, other.key);
    expect((await rotate(theirs.child.api_key_id)).status).toBe(403);
    expect(await authStatus(theirs.child.key)).toBe(200);
    expect((await rotate('00000000-0000-4000-8000-000000000099')).status).toBe(404);
    expect((await rotate(partner.api_key_id)).status).toBe(404);
    expect((await rotate('not-a-uuid')).status).toBe(400);
  });
});
