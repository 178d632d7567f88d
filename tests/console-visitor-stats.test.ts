import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { seedPartner } from './support/seed.ts';
import { beacon, type TrackedSite, trackedChild } from './support/tracker.ts';
import { seedIdentifiedVisitor } from './support/visitors.ts';

/**
 * visitor-stats, the data of the console's charts: identified companies per UTC day, and the
 * traffic mix (what the waterfall found each address to be, and the bots) of the key's trackers only.
 */
let env: TestEnv;
let site: TrackedSite;
let other: TrackedSite;

beforeAll(async () => {
  env = await createTestEnv();
  const partner = await seedPartner(env.deps, { quota: 100 });
  site = await trackedChild(env, partner.key);
  other = await trackedChild(env, (await seedPartner(env.deps, { quota: 100 })).key);
  await seedIdentifiedVisitor(env.db, site, '198.51.100.1', 'Acme');
  await seedIdentifiedVisitor(env.db, site, '198.51.100.2', 'Acme');
  await env.db`update identifications set domain = 'acme.example.com' where ip in ('198.51.100.1'::inet, '198.51.100.2'::inet) and website_id = ${site.websiteId}`;
  await seedIdentifiedVisitor(env.db, site, '198.51.100.3', 'Yesterday Ltd');
  await env.db`update identifications set domain = 'yesterday.example.com', identified_at = identified_at - interval '1 day', created_at = created_at - interval '1 day'
               where ip = '198.51.100.3'::inet and website_id = ${site.websiteId}`;
  for (const [ip, traffic] of [
    ['203.0.113.1', 'isp'],
    ['203.0.113.2', 'isp'],
    ['203.0.113.3', 'hosting'],
    ['203.0.113.4', 'vpn'],
  ] as const) {
    await env.db`
      insert into identifications (website_id, ip, api_key_id, period_start, status, identified_at, traffic_type, reason)
      values (${site.websiteId}, ${ip}::inet, ${site.apiKeyId}, date_trunc('month', now()), 'failed', now(), ${traffic}, 'seeded')`;
  }
  // Another account's identified visitor is never counted.
  await seedIdentifiedVisitor(env.db, other, '198.51.100.9', 'Elsewhere');
  // A beacon without a user agent is a bot's.
  const res = await beacon(
    env,
    { tracking_script_id: site.trackingId, type: 'pageview', url: `https://${site.domain}/`, session_id: 'bot-1' },
    { from: '192.0.2.50', omit: ['user-agent'] },
  );
  expect(res.status).toBe(202);
});
afterAll(async () => {
  await env?.close();
});

describe('visitor-stats', () => {
  it('counts distinct companies per UTC day and the traffic mix of the key’s own trackers', async () => {
    const res = await call(env, 'visitor-stats', { key: site.key });
    expect(res.status).toBe(200);
    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
    expect(res.body.identified_per_day, JSON.stringify(res.body)).toEqual([
      { day: day(1), companies: 1 },
      { day: day(0), companies: 1 },
    ]);
    expect(res.body.traffic_mix).toEqual({
      business: 3,
      isp: 2,
      hosting: 1,
      vpn: 1,
      education: 0,
      government: 0,
      unknown: 0,
      bots: 1,
      // Nothing excluded: the site has no traffic rules (traffic-rules.test.ts counts them).
      excluded_cidr: 0,
      excluded_domain: 0,
      excluded_path: 0,
      excluded_country: 0,
    });
  });

  it('a range that leaves out yesterday counts only today', async () => {
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const res = await call(env, 'visitor-stats', { key: site.key, query: { since } });
    expect(res.status).toBe(200);
    expect(res.body.identified_per_day).toHaveLength(1);
    expect((res.body.traffic_mix as Record<string, number>).business).toBe(2);
  });

  it('a range backwards, or over 366 days, is a 400 naming it', async () => {
    const now = Date.now();
    const backwards = await call(env, 'visitor-stats', {
      key: site.key,
      query: { since: new Date(now).toISOString(), until: new Date(now - 1000).toISOString() },
    });
    expect(backwards.status).toBe(400);
    expect(String(backwards.body.error)).toContain('since');
    const long = await call(env, 'visitor-stats', { key: site.key, query: { since: new Date(now - 400 * 86_400_000).toISOString() } });
    expect(long.status).toBe(400);
    expect((await call(env, 'visitor-stats', { key: site.key, query: { since: 'yesterday' } })).status).toBe(400);
  });
});
