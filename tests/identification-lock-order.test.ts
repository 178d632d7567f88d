import { aggregateTrackerEvents } from '@sightline/core';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdentificationSettler } from '../packages/core/src/tracker/settle-identifications.ts';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { untilWaitingForLock } from './support/locks.ts';
import { seedPartner } from './support/seed.ts';
import { pageView, type TrackedSite, trackedChild } from './support/tracker.ts';

/**
 * Aggregation and settling take the visitors and identifications rows in one order, the one
 * migration 0030 writes down (visitors by (website, ip), then identifications, each sorted by
 * Postgres), so a settle batch and the aggregation of its visitors' next beacons never deadlock.
 *
 * Each test forces the interleaving that deadlocked: a third connection holds one row, each side is
 * started and seen waiting in pg_stat_activity, then the row is let go. Before, the settle took the
 * visitors in the order the worker sent them (sorted as text, where 45.10.10.1 comes before
 * 45.10.9.1) and each identification before its visitor, while aggregation takes visitors in inet
 * order and then waits on the identifications: Postgres found the cycle a second later and
 * cancelled one side (a refused settle batch, logged; or a failed aggregation claim).
 */
const warnings: string[] = [];
let env: TestEnv;
let partnerKey: string;

beforeAll(async () => {
  env = await createTestEnv({ pool: 8, log: { debug() {}, info() {}, warn: (msg) => void warnings.push(msg), error() {} } });
  partnerKey = (await seedPartner(env.deps, { quota: 1000 })).key;
});
afterAll(() => env.close());

const identified = {
  status: 'identified',
  traffic_type: 'business',
  reason: 'A test business.',
  confidence: 0.9,
  country: 'US',
  identification_type: 'company',
  domain: 'example-business.com',
  company_name: 'Example Business Inc.',
};

/** Each address visited once and aggregated (a visitor and a pending identification), then visited again, not yet aggregated. */
async function returningVisitors(site: TrackedSite, ips: string[]): Promise<Map<string, string>> {
  for (const ip of ips) await pageView(env, site, ip, { path: '/' });
  await aggregateTrackerEvents({ ctx: env.deps, input: {} });
  for (const ip of ips) await pageView(env, site, ip, { path: '/again' });
  const rows = await env.db<{ id: string; ip: string }>`
    select id, host(ip) as ip from identifications where website_id = ${site.websiteId} and status = 'pending'`;
  return new Map(rows.map((r) => [r.ip, r.id]));
}

async function expectSettledAndAggregated(site: TrackedSite, ips: string[]) {
  const rows = await env.db<{ ip: string; pages: number; status: string | null }>`
    select host(v.ip) as ip, v.pages_viewed as pages, i.status
    from visitors v left join identifications i on i.id = v.identification_id
    where v.website_id = ${site.websiteId} order by v.ip`;
  expect(rows.map((r) => ({ ...r }))).toEqual(expect.arrayContaining(ips.map((ip) => ({ ip, pages: 2, status: 'identified' }))));
  expect(rows).toHaveLength(ips.length);
}

describe.skipIf(!usingPostgres)('identification lock order (real Postgres)', () => {
  it.each([
    ['IPv4', '45.10.10.1', '45.10.9.1'],
    ['IPv6', '2001:db8:0:10::1', '2001:db8:0:9::1'],
  ])(
    'a settle batch and the aggregation of the same visitors do not deadlock where text and inet order differ (%s)',
    async (_family, textFirst, inetFirst) => {
      const site = await trackedChild(env, partnerKey);
      const ids = await returningVisitors(site, [textFirst, inetFirst]);
      const settle = createIdentificationSettler(env.deps);
      const warned = warnings.length;
      const holder = postgres(env.url ?? '', { max: 1, onnotice: () => {} });
      let settling: Promise<unknown> = Promise.resolve();
      let aggregating: Promise<unknown> = Promise.resolve();
      try {
        await holder.begin(async (tx) => {
          // The identification a text-ordered batch settles second.
          await tx`select 1 from identifications where id = ${ids.get(inetFirst) ?? ''} for update`;
          settling = Promise.all(
            [textFirst, inetFirst].map((ip) => settle({ id: ids.get(ip) ?? '', apiKeyId: site.apiKeyId, result: identified, cache: null })),
          );
          await untilWaitingForLock(env.db, 'sl_settle_identifications');
          aggregating = aggregateTrackerEvents({ ctx: env.deps, input: {} });
          await untilWaitingForLock(env.db, 'sl_aggregate_tracker_events');
        });
      } finally {
        await holder.end({ timeout: 1 });
      }
      const [settled, aggregated] = await Promise.allSettled([settling, aggregating]);
      expect(aggregated).toMatchObject({ status: 'fulfilled', value: { applied: 2 } });
      expect(settled).toMatchObject({ status: 'fulfilled', value: [{ outcome: 'consumed' }, { outcome: 'consumed' }] });
      expect(warnings.slice(warned)).toEqual([]);
      await expectSettledAndAggregated(site, [textFirst, inetFirst]);
    },
  );

  it('a settle and the aggregation of its visitor’s next beacon do not deadlock when the aggregation holds the visitor first', async () => {
    const site = await trackedChild(env, partnerKey);
    const ip = '45.10.11.1';
    const ids = await returningVisitors(site, [ip]);
    const settle = createIdentificationSettler(env.deps);
    const holder = postgres(env.url ?? '', { max: 1, onnotice: () => {} });
    let settling: Promise<unknown> = Promise.resolve();
    let aggregating: Promise<unknown> = Promise.resolve();
    try {
      await holder.begin(async (tx) => {
        await tx`select 1 from visitors where website_id = ${site.websiteId} and ip = ${ip}::inet for update`;
        // The aggregation queues for the visitor first, the settle behind it.
        aggregating = aggregateTrackerEvents({ ctx: env.deps, input: {} });
        await untilWaitingForLock(env.db, 'sl_aggregate_tracker_events');
        settling = settle({ id: ids.get(ip) ?? '', apiKeyId: site.apiKeyId, result: identified, cache: null });
        await untilWaitingForLock(env.db, 'sl_settle_identifications');
      });
    } finally {
      await holder.end({ timeout: 1 });
    }
    const [settled, aggregated] = await Promise.allSettled([settling, aggregating]);
    expect(aggregated).toMatchObject({ status: 'fulfilled', value: { applied: 1 } });
    expect(settled).toMatchObject({ status: 'fulfilled', value: { outcome: 'consumed' } });
    await expectSettledAndAggregated(site, [ip]);
  });
});
