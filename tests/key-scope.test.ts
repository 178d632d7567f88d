import { createDirectAccount, createDirectKey, createPartner, migrate } from '@sightline/core';
import { loadSchema } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, envForDatabase, type TestEnv } from './support/app.ts';
import { openTestDatabase } from './support/db.ts';
import { createChildVia, seedDirectAccount, seedDirectKey, seedPartner, uniqueDomain } from './support/seed.ts';

/**
 * A key's scope (migration 0028): `account` acts on its account, `websites` reads only the websites
 * it owns. In a partner account only the master key acts on the account; a direct account's keys
 * and a managed child's key act on theirs. The database holds it, whoever writes the key.
 */
let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(() => env.close());

const scopeOf = async (id: string) => (await env.db<{ scope: string }>`select scope from api_keys where id = ${id}`)[0]?.scope;

async function expectViolation(run: () => Promise<unknown>) {
  await expect(run()).rejects.toMatchObject({ code: '23514' });
}

describe('a new key’s scope follows from its account', () => {
  it('a partner’s master key, a direct account’s keys and a child’s key act on their account; a partner’s other keys read their websites', async () => {
    const partner = await seedPartner(env.deps, { quota: 100 });
    const direct = await seedDirectAccount(env.deps);
    const child = await createChildVia(env, partner.key);
    expect(await scopeOf(partner.api_key_id)).toBe('account');
    expect(await scopeOf(direct.api_key_id)).toBe('account');
    expect(await scopeOf((await seedDirectKey(env.deps, direct.account_id)).api_key_id)).toBe('account');
    expect(await scopeOf(child.child.api_key_id)).toBe('account');
    expect(await scopeOf((await seedDirectKey(env.deps, partner.account_id)).api_key_id)).toBe('websites');
  });
});

describe('scope invariants are constraints', () => {
  it('refuse a master key, or a managed child’s key, scoped to its websites', async () => {
    const partner = await seedPartner(env.deps, { quota: 100 });
    const child = await createChildVia(env, partner.key);
    await expectViolation(() => env.db`update api_keys set scope = 'websites' where id = ${partner.api_key_id}`);
    await expectViolation(() => env.db`update api_keys set scope = 'websites' where id = ${child.child.api_key_id}`);
    await expectViolation(() => env.db`update api_keys set scope = 'everything' where id = ${partner.api_key_id}`);
  });

  it('refuse a second key to a partner account, however it would be written', async () => {
    const partner = await seedPartner(env.deps, { quota: 100 });
    const own = await seedDirectKey(env.deps, partner.account_id);
    await expectViolation(() => env.db`update api_keys set scope = 'account' where id = ${own.api_key_id}`);
    await expectViolation(
      () => env.db`
        insert into api_keys (account_id, key_hash, key_prefix, scope)
        values (${partner.account_id}, ${'c'.repeat(64)}, 'sl_c', 'account')`,
    );
    // A direct account's key moved into the partner's account keeps its scope only if it is the narrow one.
    const direct = await seedDirectAccount(env.deps);
    await expectViolation(() => env.db`update api_keys set account_id = ${partner.account_id} where id = ${direct.api_key_id}`);
  });
});

describe('the auth cache', () => {
  it('forgets a key whose scope changed behind this process’s back', async () => {
    const direct = await seedDirectAccount(env.deps);
    // Cached by a request that acts on the account.
    expect((await call(env, 'api-create-connect-link', { key: direct.key, method: 'POST' })).status).toBe(201);
    // Another process narrows the key; this one hears of it by notification (the trigger in migrations/functions/auth/sl_notify_auth_changed.sql).
    await env.db`update api_keys set scope = 'websites' where id = ${direct.api_key_id}`;
    await env.authSync();
    const refused = await call(env, 'api-create-connect-link', { key: direct.key, method: 'POST' });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/scoped to its own websites/);
  });
});

describe('migration 0028', () => {
  it('scopes the keys already released, and the partner’s own tracker keys, to their websites; every other key keeps the account', async () => {
    const old = await envForDatabase(await openTestDatabase({ before: '0028' }));
    try {
      // Seeded with what a 0027 database has: operator verbs and the ledger's own SQL functions.
      const partner = await createPartner({ ctx: old.deps, input: { name: 'Before 0028', quota: 100 } });
      const own = await createDirectKey({ ctx: old.deps, input: { accountId: partner.account_id, domain: uniqueDomain('own') } });
      const childOf = async (label: string) => {
        const hash = await old.deps.keyring.hashApiKey(`sl_${label}_${crypto.randomUUID()}`);
        const [row] = await old.db<{ api_key_id: string }>`
          select api_key_id from sl_create_child(${partner.api_key_id}, ${label}, ${uniqueDomain(label)}, 0, null, ${hash}, 'sl_x', null, null)`;
        return row?.api_key_id ?? '';
      };
      const managed = await childOf('managed');
      const released = await childOf('released');
      await old.db`select * from sl_release_child(${partner.api_key_id}, ${released})`;
      const direct = await createDirectAccount({ ctx: old.deps, input: { name: 'Direct before 0028', domain: uniqueDomain('direct') } });

      expect(await migrate(old.db, await loadSchema())).toContain('0028_key_scope.sql');
      const scopes = Object.fromEntries(
        (await old.db<{ id: string; scope: string }>`select id, scope from api_keys`).map((k) => [k.id, k.scope] as const),
      );
      expect({
        master: scopes[partner.api_key_id],
        own: scopes[own.api_key_id],
        managed: scopes[managed],
        released: scopes[released],
        direct: scopes[direct.api_key_id],
      }).toEqual({ master: 'account', own: 'websites', managed: 'account', released: 'websites', direct: 'account' });
    } finally {
      await old.close();
    }
  });
});
