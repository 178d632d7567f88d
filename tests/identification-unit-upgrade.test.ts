import { aggregateTrackerEvents, createDirectAccount, migrate } from '@sightline/core';
import { loadSchema } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envForDatabase, type TestEnv } from './support/app.ts';
import { openTestDatabase } from './support/db.ts';
import { uniqueDomain } from './support/seed.ts';

/**
 * Migration 0030 keys an IPv6 identification on its /64. Identifications made before it may share a
 * /64, website and period: one stays the unit's, a pending extra (it used nothing) is removed, and a
 * settled extra (its ID is used) stays, marked as keyed by its address.
 */
let env: TestEnv;
let site: { api_key_id: string; website_id: string };

beforeAll(async () => {
  env = await envForDatabase(await openTestDatabase({ before: '0030' }));
  site = await createDirectAccount({ ctx: env.deps, input: { name: 'Upgrade', domain: uniqueDomain('unit-upgrade') } });
});
afterAll(() => env.close());

async function made(ip: string, status: 'identified' | 'pending', minutesAgo: number): Promise<string> {
  const [row] = await env.db<{ id: string }>`
    insert into identifications (website_id, ip, api_key_id, period_start, status, created_at, identified_at,
                                 identification_type, traffic_type, domain, company_name)
    select ${site.website_id}::uuid, ${ip}::inet, ${site.api_key_id}::uuid, sl_identification_period(${site.api_key_id}::uuid), ${status},
           now() - make_interval(mins => ${minutesAgo}),
           case when ${status} = 'identified' then now() - make_interval(mins => ${minutesAgo}) end,
           case when ${status} = 'identified' then 'company' end, case when ${status} = 'identified' then 'business' end,
           case when ${status} = 'identified' then 'example.com' end, case when ${status} = 'identified' then 'Example' end
    returning id`;
  return row?.id ?? '';
}

describe('0030 on identifications made before it', () => {
  it('keeps one identification per /64, website and period, removes pending extras and marks settled ones keyed by their address', async () => {
    const settled = [
      await made('2001:db8:a:1::1', 'identified', 30),
      await made('2001:db8:a:1::2', 'identified', 20),
      await made('2001:db8:a:1::3', 'identified', 10),
    ];
    const pendingOnly = [await made('2001:db8:a:2::1', 'pending', 30), await made('2001:db8:a:2::2', 'pending', 20)];
    const mixed = [await made('2001:db8:a:3::1', 'pending', 30), await made('2001:db8:a:3::2', 'identified', 20)];
    const v4 = [await made('198.51.100.1', 'identified', 30), await made('198.51.100.2', 'pending', 30)];
    await env.db`
      insert into visitors (website_id, ip, api_key_id, first_seen, last_seen, identification_id, identified_count)
      values (${site.website_id}::uuid, '2001:db8:a:1::1'::inet, ${site.api_key_id}::uuid, now(), now(), ${settled[0] ?? ''}::uuid, 1)`;
    expect(await migrate(env.db, await loadSchema())).toContain('0030_identification_order.sql');

    const rows = await env.db<{ id: string; keyed_by_address: boolean }>`
      select id, keyed_by_address from identifications where website_id = ${site.website_id}`;
    const state = new Map(rows.map((r) => [r.id, r.keyed_by_address]));
    // The first identified of the /64 is the unit's; the later ones keep their IDs, keyed by address.
    expect(settled.map((id) => state.get(id))).toEqual([false, true, true]);
    // Pending: the oldest stays; the identified one wins over a pending one.
    expect(pendingOnly.map((id) => state.get(id))).toEqual([false, undefined]);
    expect(mixed.map((id) => state.get(id))).toEqual([undefined, false]);
    expect(v4.map((id) => state.get(id))).toEqual([false, false]);

    // A new address of the first /64 this period: no new identification; it shares the unit's.
    const [event] = await env.db<{ id: string }>`
      insert into tracker_events (website_id, api_key_id, kind, ip, is_bot, session_id, url)
      values (${site.website_id}::uuid, ${site.api_key_id}::uuid, 'pageview', '2001:db8:a:1::9'::inet, false, 's-new', 'https://example.com/')
      returning id`;
    await env.db`insert into tracker_queue (event_id) values (${event?.id ?? 0})`;
    await aggregateTrackerEvents({ ctx: env.deps, input: {} });
    const [count] = await env.db<{ n: number }>`
      select count(*)::int as n from identifications where website_id = ${site.website_id} and ip <<= '2001:db8:a:1::/64'::inet`;
    expect(count?.n).toBe(3);
    const [visitor] = await env.db<{ identification_id: string }>`
      select identification_id from visitors where website_id = ${site.website_id} and ip = '2001:db8:a:1::9'::inet`;
    expect(visitor?.identification_id).toBe(settled[0]);
    // A pending row can never be keyed by its address.
    await expect(env.db`update identifications set keyed_by_address = true where id = ${pendingOnly[0] ?? ''}::uuid`).rejects.toMatchObject({
      code: '23514',
    });
  });
});
