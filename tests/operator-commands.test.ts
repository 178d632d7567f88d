import { runOperatorCommand } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { createChildVia, seedPartner } from './support/seed.ts';

/**
 * Flags arrive as strings from argv or the /_operator body; each command's zod schema turns them into
 * the typed values its verb takes. These prove the parsed values, not the raw strings, reach the verb.
 */
let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(() => env.close());

const poolOf = async (key: string) => (await call(env, 'partner-pool-state', { key })).body.pool as Json;

describe('operator commands hand the verb its parsed flags', () => {
  it('create-partner: --quota 50 and --per-id-pence 1.5 arrive as numbers', async () => {
    const out = (await runOperatorCommand(env.deps, 'create-partner', { name: 'Typed', quota: '50', topup: '7', 'per-id-pence': '1.5' })) as {
      key: string;
    };
    expect(await poolOf(out.key)).toMatchObject({ monthly_id_quota: 50, topup_balance: 7, available: 57, partner_per_id_pence: 1.5 });
  });

  it('consume: --count is a bounded whole number and runs that many identifications', async () => {
    const p = await seedPartner(env.deps, { quota: 50 });
    expect(await runOperatorCommand(env.deps, 'consume', { 'key-id': p.api_key_id, count: '3' })).toEqual({
      key_id: p.api_key_id,
      outcomes: { consumed: 3 },
    });
    expect(await poolOf(p.key)).toMatchObject({ ids_used_this_period: 3 });
    // Without --count it is one identification.
    await runOperatorCommand(env.deps, 'consume', { 'key-id': p.api_key_id });
    expect(await poolOf(p.key)).toMatchObject({ ids_used_this_period: 4 });

    await expect(runOperatorCommand(env.deps, 'consume', { 'key-id': p.api_key_id, count: '10001' })).rejects.toThrow(
      /--count must be at most 10000/,
    );
    await expect(runOperatorCommand(env.deps, 'consume', { 'key-id': p.api_key_id, count: '2.5' })).rejects.toThrow(/--count must be a whole number/);
    await expect(runOperatorCommand(env.deps, 'consume', { 'key-id': p.api_key_id, count: 'lots' })).rejects.toThrow(/--count must be a number/);
    expect(await poolOf(p.key)).toMatchObject({ ids_used_this_period: 4 });
  });

  it('purchase-topup: the optional --child-id, when given, credits that child rather than the pool', async () => {
    const p = await seedPartner(env.deps, { quota: 100 });
    const c = await createChildVia(env, p.key, { monthly_id_quota: 1 });
    const childId = c.child.api_key_id;
    expect(await runOperatorCommand(env.deps, 'purchase-topup', { 'child-id': childId, amount: '4' })).toEqual({ credited: true });
    const [sub] = await env.db<{ topup_balance: number }>`select topup_balance from child_subscriptions where api_key_id = ${childId}`;
    expect(sub).toEqual({ topup_balance: 4 });
    expect(await poolOf(p.key)).toMatchObject({ topup_balance: 0 });

    await expect(runOperatorCommand(env.deps, 'purchase-topup', { 'child-id': 'not-a-uuid', amount: '4' })).rejects.toThrow(
      /--child-id must be a uuid/,
    );
  });

  it('refuses an unknown flag by name, with the command’s usage line', async () => {
    const err = await runOperatorCommand(env.deps, 'create-partner', { name: 'x', colour: 'red' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    const message = err instanceof Error ? err.message : '';
    expect(message).toMatch(/colour/);
    expect(message).toMatch(/\nusage: npm run admin -- create-partner --name N /);
  });
});
