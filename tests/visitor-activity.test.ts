import { scoreIdentifications, workTrackerQueue } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { seedUsCompaniesIcp } from './support/icps.ts';
import { realIpDeps } from './support/ip.ts';
import { seedPartner } from './support/seed.ts';
import { pageView, trackedChild } from './support/tracker.ts';

/**
 * visitor-activity, the console's visitor page: a visitor's pages of its last day on the site,
 * newest first, bots' beacons left out, and its scores against the account's active ICPs.
 * 17.x is Apple's own network (a US business in the shipped data).
 */
let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv({ ip: realIpDeps({ providers: [], timeoutMs: 300 }) });
});
afterAll(async () => {
  await env?.close();
});

describe('visitor-activity', () => {
  it('lists the visitor’s pages newest first and its ICP scores; another account’s key finds no such visitor', async () => {
    const partner = await seedPartner(env.deps, { quota: 100 });
    const site = await trackedChild(env, partner.key);
    const ip = '17.253.40.7';
    await seedUsCompaniesIcp(env.db, site.apiKeyId);
    for (const path of ['/', '/pricing', '/contact']) await pageView(env, site, ip, { path });
    await pageView(env, site, ip, { path: '/bot-only', userAgent: 'Googlebot/2.1 (+http://www.google.com/bot.html)' });
    await workTrackerQueue({ ctx: env.deps, input: {} });
    // The worker starts scoring as after-work once the visitor is identified; that run holds the
    // identification's row (SKIP LOCKED), so a scoring run beside it finds nothing to take and
    // returns before those scores commit. Wait for it, then score what is left (nothing, unless
    // the kick did not run), so the scores are in when the page is read.
    await env.settle();
    await scoreIdentifications({ ctx: env.deps, input: {} });

    const res = await call(env, 'visitor-activity', { key: site.key, query: { tracker_site: site.domain, ip } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const pages = res.body.pages as { url: string; at: string }[];
    expect(pages.map((p) => new URL(p.url).pathname)).toEqual(['/contact', '/pricing', '/']);
    expect(res.body.icp_scores).toEqual([expect.objectContaining({ icp_name: 'US companies', score: 100, qualified: true })]);

    const stranger = await trackedChild(env, (await seedPartner(env.deps, { quota: 10 })).key);
    const theirs = await call(env, 'visitor-activity', { key: stranger.key, query: { tracker_site: site.domain, ip } });
    expect(theirs.status).toBe(404);
    const unknown = await call(env, 'visitor-activity', { key: site.key, query: { tracker_site: site.domain, ip: '17.253.40.8' } });
    expect(unknown.status).toBe(404);
    const bad = await call(env, 'visitor-activity', { key: site.key, query: { tracker_site: site.domain, ip: 'nope' } });
    expect((bad.body as Json).success).toBe(false);
    expect(bad.status).toBe(400);
  });
});
