import { cspAllows } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { startReceiver } from './support/receiver.ts';
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
      page: null,
      likely_causes: expect.arrayContaining([expect.objectContaining({ code: 'consent_pending' }), expect.objectContaining({ code: 'ad_blocker' })]),
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
    expect(after.body).toMatchObject({ installed: true, page_views_24h: 1, bot_beacons_24h: 1, likely_causes: [] });
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

  describe('with inspect, it reads a page of the website (a real server on 127.0.0.1)', () => {
    const inspect = (partnerKey: string, childId: string, pageUrl: string) =>
      call(env, 'partner-install-check', { key: partnerKey, query: { child_api_key_id: childId, inspect: 'true', page_url: pageUrl } });

    it('finds the snippet and a CSP that lets it load and send, or says which is missing', async () => {
      const partner = await seedPartner(env.deps, { quota: 100 });
      const site = await trackedChild(env, partner.key);
      let html = '<html><head><title>Shop</title></head><body>Hello</body></html>';
      let csp: string | null = null;
      const page = await startReceiver((_q, res) => {
        res.writeHead(200, { 'content-type': 'text/html', ...(csp ? { 'content-security-policy': csp } : {}) }).end(html);
      });
      try {
        const url = `http://127.0.0.1:${page.port}/`;
        const missing = await inspect(partner.key, site.apiKeyId, url);
        expect(missing.status).toBe(200);
        expect(missing.body.page).toMatchObject({ status: 200, snippet_found: false, script_allowed: true, beacons_allowed: true });
        expect((missing.body.likely_causes as { code: string }[])[0]?.code).toBe('snippet_missing');
        expect(page.received[0]?.method).toBe('GET');

        html = `<html><head><script async src="https://sightline.example.net/t/${site.trackingId}.js"></script></head></html>`;
        csp = "default-src 'self'; script-src 'self' https://cdn.example.org";
        const blocked = await inspect(partner.key, site.apiKeyId, url);
        expect(blocked.body.page).toMatchObject({ snippet_found: true, script_allowed: false, beacons_allowed: false });
        expect((blocked.body.likely_causes as { code: string }[]).slice(0, 2).map((c) => c.code)).toEqual([
          'csp_blocks_script',
          'csp_blocks_beacons',
        ]);

        csp = "default-src 'self'; script-src 'self' https://*.example.net; connect-src https://sightline.example.net";
        const fine = await inspect(partner.key, site.apiKeyId, url);
        expect(fine.body.page).toMatchObject({ snippet_found: true, script_allowed: true, beacons_allowed: true, content_security_policy: csp });
        expect((fine.body.likely_causes as { code: string }[])[0]?.code).toBe('consent_pending');
      } finally {
        await page.close();
      }
    });

    it('says a page it cannot read could not be read, and refuses a page of another site', async () => {
      const partner = await seedPartner(env.deps, { quota: 100 });
      const site = await trackedChild(env, partner.key);
      const page = await startReceiver((_q, res) => res.writeHead(503).end('down'));
      try {
        const down = await inspect(partner.key, site.apiKeyId, `http://127.0.0.1:${page.port}/`);
        expect(down.body.page, JSON.stringify(down.body.page)).toMatchObject({ status: 503, snippet_found: null });
        expect((down.body.likely_causes as { code: string }[])[0]?.code).toBe('page_unreachable');
      } finally {
        await page.close();
      }
      const elsewhere = await inspect(partner.key, site.apiKeyId, 'https://another-site.example.org/');
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.body.error).toMatch(/page_url must be a page of/);
      const alone = await call(env, 'partner-install-check', {
        key: partner.key,
        query: { child_api_key_id: site.apiKeyId, page_url: `https://${site.domain}/` },
      });
      expect(alone.status).toBe(400);
    });

    it('reads CSP as browsers do: default-src stands in, every policy must allow, keywords and wildcards', () => {
      const page = new URL('https://shop.example.com/');
      const api = new URL('https://api.sightline.io/t/x.js');
      expect(cspAllows("default-src 'self'", 'script-src', api, page)).toBe(false);
      expect(cspAllows("default-src 'self'; script-src https:", 'script-src', api, page)).toBe(true);
      expect(cspAllows('script-src *.sightline.io', 'script-src', api, page)).toBe(true);
      expect(cspAllows('script-src sightline.io', 'script-src', api, page)).toBe(false);
      expect(cspAllows("img-src 'none'", 'connect-src', api, page)).toBe(true);
      expect(cspAllows("script-src *, script-src 'self'", 'script-src', api, page)).toBe(false);
      expect(cspAllows("script-src 'nonce-abc' 'strict-dynamic'", 'script-src', api, page)).toBe(null);
      expect(cspAllows('connect-src https://api.sightline.io:8443', 'connect-src', api, page)).toBe(false);
      expect(cspAllows("connect-src 'self'", 'connect-src', new URL('https://shop.example.com/sightline/collect'), page)).toBe(true);
    });
  });
});
