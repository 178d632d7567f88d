import { aggregateTrackerEvents, createDirectAccount, migrate } from '@sightline/core';
import { loadSchema } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envForDatabase } from './support/app.ts';
import { openTestDatabase, type TestDatabase } from './support/db.ts';
import { uniqueDomain } from './support/seed.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(() => t.drop());

describe('migrations', () => {
  it('apply once: a second run changes nothing', async () => {
    expect(await migrate(t.db, await loadSchema())).toEqual([]);
  });

  it('apply safely from two starts at once', async () => {
    const both = await Promise.all([migrate(t.db, await loadSchema()), migrate(t.db, await loadSchema())]);
    expect(both.flat()).toEqual([]);
  });

  it('0025 puts the events still waiting for the worker on its queue, and only those', async () => {
    const env = await envForDatabase(await openTestDatabase({ before: '0025' }));
    try {
      // Seeded by the operator verb, which names only the columns every schema has: the API reads
      // keys through columns later migrations add (0028's scope), which a 0024 database lacks.
      const domain = uniqueDomain('upgrade');
      const site = await createDirectAccount({ ctx: env.deps, input: { name: 'Upgrade', domain } });
      // As 0024 left them: one event folded already, two waiting, and a bot's (never to fold).
      const ids = await env.db<{ id: number }>`
        insert into tracker_events (website_id, api_key_id, kind, ip, is_bot, session_id, url, identify_status, aggregated_at)
        select ${site.website_id}::uuid, ${site.api_key_id}::uuid, 'pageview', '203.0.113.9'::inet, b, 's-' || g,
               'https://' || ${domain} || '/p' || g, case when b then 'skipped' when g = 1 then 'done' else 'pending' end,
               case when g = 1 then now() end
        from generate_series(1, 4) g, lateral (select g = 4 as b) x
        order by g
        returning id`;
      expect(await migrate(env.db, await loadSchema())).toContain('0025_tracker_queue.sql');
      const queued = await env.db<{ event_id: number }>`select event_id from tracker_queue order by event_id`;
      expect(queued.map((q) => Number(q.event_id))).toEqual(ids.slice(1, 3).map((r) => Number(r.id)));
      await aggregateTrackerEvents({ ctx: env.deps, input: {} });
      const [visitor] = await env.db<{ pages_viewed: number }>`select pages_viewed from visitors where ip = '203.0.113.9'::inet`;
      expect(visitor?.pages_viewed).toBe(2);
    } finally {
      await env.close();
    }
  });
});

describe('helpers called once per identified visitor', () => {
  it('are PL/pgSQL, which keeps their plans for the session (a language sql one is planned on every call)', async () => {
    const rows = await t.db<{ proname: string; lanname: string }>`
      select p.proname, l.lanname from pg_proc p join pg_language l on l.oid = p.prolang
      where p.proname in ('sl_event_has_destination', 'sl_visitor_identified_data', 'sl_balance_data') order by 1`;
    expect(rows).toEqual([
      { proname: 'sl_balance_data', lanname: 'plpgsql' },
      { proname: 'sl_event_has_destination', lanname: 'plpgsql' },
      { proname: 'sl_visitor_identified_data', lanname: 'plpgsql' },
    ]);
  });
});

describe('ledger invariants are CHECK constraints', () => {
  async function expectViolation(run: () => Promise<unknown>) {
    await expect(run()).rejects.toMatchObject({ code: expect.stringMatching(/^23/) as unknown });
  }

  it('refuse negative balances and usage beyond the quota', async () => {
    const [a] = await t.db<{ id: string }>`insert into accounts (name, is_partner) values ('inv', true) returning id`;
    const acc = a?.id ?? '';
    await expectViolation(() => t.db`insert into pools (account_id, topup_balance) values (${acc}, -1)`);
    await expectViolation(() => t.db`insert into pools (account_id, monthly_id_quota, ids_used_this_period) values (${acc}, 5, 6)`);
    // Monthly-invoice pools may go over (the overage is invoiced).
    await t.db`insert into pools (account_id, monthly_id_quota, ids_used_this_period, pool_billing_mode) values (${acc}, 5, 6, 'invoice_monthly')`;
    await expectViolation(() => t.db`update accounts set credit_balance = -5 where id = ${acc}`);
  });

  it('refuse a child subscription whose usage exceeds its quota or whose top-up is negative', async () => {
    const [a] = await t.db<{ id: string }>`insert into accounts (name, is_phantom) values ('child', true) returning id`;
    const [k] = await t.db<{ id: string }>`
      insert into api_keys (account_id, key_hash, key_prefix) values (${a?.id ?? ''}, ${'f'.repeat(64)}, 'sl_x') returning id`;
    const key = k?.id ?? '';
    await expectViolation(
      () => t.db`
      insert into child_subscriptions (api_key_id, monthly_id_quota, ids_used_this_period, current_period_end)
      values (${key}, 1, 2, now() + interval '30 days')`,
    );
    await expectViolation(
      () => t.db`
      insert into child_subscriptions (api_key_id, topup_balance, current_period_end) values (${key}, -1, now() + interval '30 days')`,
    );
  });

  it('refuse a second live website for one domain, a malformed domain and a second master key', async () => {
    const [a] = await t.db<{ id: string }>`insert into accounts (name, is_partner) values ('p', true) returning id`;
    const acc = a?.id ?? '';
    const [k] = await t.db<{ id: string }>`
      insert into api_keys (account_id, key_hash, key_prefix, is_partner_master) values (${acc}, ${'a'.repeat(64)}, 'sl_a', true) returning id`;
    const key = k?.id ?? '';
    await t.db`insert into websites (api_key_id, domain) values (${key}, 'one.example.com')`;
    await expectViolation(() => t.db`insert into websites (api_key_id, domain) values (${key}, 'one.example.com')`);
    await expectViolation(() => t.db`insert into websites (api_key_id, domain) values (${key}, 'https://two.example.com')`);
    await expectViolation(() => t.db`insert into websites (api_key_id, domain) values (${key}, 'Upper.Example.com')`);
    await expectViolation(
      () => t.db`
      insert into api_keys (account_id, key_hash, key_prefix, is_partner_master) values (${acc}, ${'b'.repeat(64)}, 'sl_b', true)`,
    );
  });

  it('refuse a plaintext-looking key hash', async () => {
    const [a] = await t.db<{ id: string }>`insert into accounts (name) values ('x') returning id`;
    await expectViolation(() => t.db`insert into api_keys (account_id, key_hash, key_prefix) values (${a?.id ?? ''}, 'sl_plaintext', 'sl_p')`);
  });
});
