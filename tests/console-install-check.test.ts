import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { seedPartner } from './support/seed.ts';
import { beacon, pageView, trackedChild } from './support/tracker.ts';

/**
 * partner-install-check, the console's install check: a child's tracker counts as installed once a
 * browser's page view from its website has arrived; a bot's beacons are counted apart; only the
 * child's own partner may ask.
 */
let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(async () => {
  await env?.close();
});

describe('partner-install-check', () => {
  it('is not installed until a browser’s page view arrives; a bot’s beacon does not count', async () => {
    const partner = await seedPartner(env.deps, { quota: 100 });
    const site = await trackedChild(env, partner.key);
    const ask = () => call(env, 'partner-install-check', { key: partner.key, query: { child_api_key_id: site.apiKeyId } });
    expect((await ask()).body).toEqual({
      success: true,
      child_api_key_id: site.apiKeyId,
      domain: site.domain,
      tracking_script_id: site.trackingId,
      installed: false,
      last_page_view_at: null,
      page_views_24h: 0,
      bot_beacons_24h: 0,
    });
    const bot = await beacon(
      env,
      { tracking_script_id: site.trackingId, type: 'pageview', url: `https://${site.domain}/`, session_id: 'bot' },
      { from: '192.0.2.60', omit: ['user-agent'] },
    );
    expect(bot.status).toBe(202);
    expect((await ask()).body).toMatchObject({ installed: false, page_views_24h: 0, bot_beacons_24h: 1 });

    await pageView(env, site, '198.51.100.20');
    const after = await ask();
    expect(after.body).toMatchObject({ installed: true, page_views_24h: 1, bot_beacons_24h: 1 });
    expect(Date.now() - Date.parse(String(after.body.last_page_view_at))).toBeLessThan(60_000);
  });

  it('another partner’s child is a 403, a key that is no child a 404', async () => {
    const partner = await seedPartner(env.deps, { quota: 100 });
    const elsewhere = await trackedChild(env, (await seedPartner(env.deps, { quota: 100 })).key);
    const theirs = await call(env, 'partner-install-check', { key: partner.key, query: { child_api_key_id: elsewhere.apiKeyId } });
    expect(theirs.status).toBe(403);
    const none = await call(env, 'partner-install-check', { key: partner.key, query: { child_api_key_id: '00000000-0000-4000-8000-000000000000' } });
    expect(none.status).toBe(404);
  });
});
