import { aggregateTrackerEvents } from '@sightline/core';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './support/app.ts';
import { CHROMIUM, chromiumFor, type LoopbackHost, startLoopbackHost } from './support/browser.ts';
import { createChildVia, seedPartner, uniqueDomain } from './support/seed.ts';

/**
 * The tracker in a real Chromium, against the Node host over real HTTP on 127.0.0.1: the script is
 * loaded from the API's host, the page is on the website's own domain, and every claim is checked
 * in the database (tracker_events, and visitors after the worker ran), never in the script.
 */
const haveChromium = chromiumFor('tracker-browser');

const API_HOST = 'api.sightline.test';
// A desktop Chrome's user agent: headless Chromium's own names HeadlessChrome, which isbot (rightly) calls a bot.
const USER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';

interface Site {
  id: string;
  domain: string;
  trackingId: string;
}

/** What the tests reach for inside the page (set by the tracker or by the init scripts below); functions run there are serialised, so each casts `window` itself. */
type PageGlobals = {
  sightline: { grant(): void; revoke(): void; status(): string };
  marker?: number;
  setPageState(visible: boolean, focused: boolean): void;
};

/** Calls the page's consent API (`window.sightline`) as a site's banner would. */
const consent = (page: Page, call: 'grant' | 'revoke' | 'status') =>
  page.evaluate((c) => String((window as unknown as PageGlobals).sightline[c]() ?? ''), call);

let env: TestEnv;
let host: LoopbackHost;
let browser: Browser;
let port = 0;
let partnerKey = '';
/** The markup each website's pages carry in their <head>, by host name. */
const snippets = new Map<string, string>();

beforeAll(async () => {
  if (!haveChromium) return;
  env = await createTestEnv();
  partnerKey = (await seedPartner(env.deps, { quota: 1000 })).key;
  // One server for both sides: the API (the script, collect) on any host, and the websites' pages.
  host = await startLoopbackHost({
    log: env.deps.log,
    fetch: (req, bindings) => {
      const url = new URL(req.url);
      if (url.pathname.startsWith('/t/') || url.pathname.startsWith('/functions/')) return env.app.fetch(req, bindings);
      const snippet = snippets.get(url.hostname);
      if (snippet === undefined) return new Response('no such site', { status: 404 });
      // No Cache-Control: no-store, which would keep the page out of the back/forward cache.
      const html = `<!doctype html><html><head><meta charset="utf-8"><title>${url.pathname}</title>${snippet}</head><body><h1>${url.pathname}</h1><p>A page of the shop.</p><a href="/other">other</a></body></html>`;
      return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } });
    },
  });
  port = host.port;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Playwright turns the back/forward cache off by default; the restore test needs it.
    ignoreDefaultArgs: ['--disable-back-forward-cache'],
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      `--host-resolver-rules=MAP *.example.com 127.0.0.1, MAP ${API_HOST} 127.0.0.1`,
      // Browser-wide too: a keepalive beacon that outlives its page (pagehide) leaves without the
      // context's override, and with headless Chromium's own user agent would be stored as a bot's.
      `--user-agent=${USER_AGENT}`,
    ],
  });
}, 60_000);

afterAll(async () => {
  if (!haveChromium) return;
  await browser?.close();
  await host?.close();
  await env?.close();
});

/** A fresh website (its own domain, so its own visitor) whose pages carry `snippet(site)`. */
async function newSite(snippet: (s: Site) => string): Promise<Site> {
  const created = await createChildVia(env, partnerKey, { domain: uniqueDomain('browser') });
  const site = { id: created.website.id, domain: created.website.domain, trackingId: created.website.tracking_script_id };
  snippets.set(site.domain, snippet(site));
  return site;
}

const scriptBase = () => `http://${API_HOST}:${port}/t`;
/** The per-site snippet: configured by the server. */
const perSite =
  (attrs = '') =>
  (s: Site) =>
    `<script async src="${scriptBase()}/${s.trackingId}.js"${attrs}></script>`;
/** The generic snippet: the id (and anything else) on the tag. */
const generic =
  (attrs = '') =>
  (s: Site) =>
    `<script defer src="${scriptBase()}/tracker.js" data-id="${s.trackingId}"${attrs}></script>`;
const pageUrl = (s: Site, path = '/') => `http://${s.domain}:${port}${path}`;

/** A browser context as a visitor's: a desktop user agent, and (unless told) no automation flag. */
async function visitor(opts: { automation?: boolean } = {}): Promise<BrowserContext> {
  const ctx = await browser.newContext({ userAgent: USER_AGENT });
  // Playwright sets navigator.webdriver; a real visitor's browser does not.
  if (!opts.automation) await ctx.addInitScript(() => Object.defineProperty(Navigator.prototype, 'webdriver', { get: () => false }));
  return ctx;
}

/** Every collect request the page makes, so a test can wait until none is in flight. */
function watchBeacons(page: Page) {
  const sent: string[] = [];
  let pending = 0;
  page.on('request', (r) => {
    if (r.url().includes('/collect')) {
      sent.push(r.url());
      pending++;
    }
  });
  const done = (r: { url(): string }) => {
    if (r.url().includes('/collect')) pending--;
  };
  page.on('requestfinished', done);
  page.on('requestfailed', done);
  return { sent, inFlight: () => pending };
}

type EventRow = { kind: string; path: string; session_id: string; active_ms: number | null; is_bot: boolean; referrer: string | null; ip: string };

async function events(site: Site): Promise<EventRow[]> {
  return env.db<EventRow>`
    select kind, split_part(regexp_replace(url, '^https?://[^/]+', ''), '?', 1) as path, session_id, active_ms, is_bot, referrer, host(ip) as ip
    from tracker_events where website_id = ${site.id} order by id`;
}

/** Waits until the database holds `count` events of the site, then a little longer to see that no more arrive. */
async function expectEvents(site: Site, count: number): Promise<EventRow[]> {
  await expect.poll(async () => (await events(site)).length, { timeout: 10_000, interval: 50 }).toBe(count);
  await new Promise((r) => setTimeout(r, 300));
  const rows = await events(site);
  expect(rows).toHaveLength(count);
  return rows;
}

async function visitorOf(site: Site) {
  await aggregateTrackerEvents({ ctx: env.deps, input: {} });
  const rows = await env.db<{ visit_count: number; pages_viewed: number; active_ms: number; referrer: string | null }>`
    select visit_count, pages_viewed, active_ms::int as active_ms, referrer from visitors where website_id = ${site.id}`;
  expect(rows.length).toBeLessThanOrEqual(1);
  return rows[0];
}

/**
 * The paths viewed, sorted: beacons sent in quick succession are requests in flight at once, and the
 * server may store them in either order, so which pages counted is what a test can require.
 */
const pageviews = (rows: EventRow[]) =>
  rows
    .filter((r) => r.kind === 'pageview')
    .map((r) => r.path)
    .sort();

describe.skipIf(!haveChromium)('the tracker in Chromium', () => {
  it('lands a visit: a page view on load, the referrer, a session per tab, no cookies', async () => {
    const site = await newSite(perSite());
    const ctx = await visitor();
    try {
      const page = await ctx.newPage();
      await page.goto(pageUrl(site), { referer: 'https://www.google.com/' });
      let rows = await expectEvents(site, 1);
      expect(rows[0]).toMatchObject({ kind: 'pageview', path: '/', is_bot: false, referrer: 'https://www.google.com/', ip: '127.0.0.1' });
      // The next page in the same tab is the same visit; another tab is another.
      await page.goto(pageUrl(site, '/about'));
      const other = await ctx.newPage();
      await other.goto(pageUrl(site, '/pricing'));
      rows = await expectEvents(site, 3);
      expect(pageviews(rows)).toEqual(['/', '/about', '/pricing']);
      expect(rows[1]?.session_id).toBe(rows[0]?.session_id);
      expect(rows[2]?.session_id).not.toBe(rows[0]?.session_id);
      expect(await ctx.cookies()).toEqual([]);
      expect(await visitorOf(site)).toMatchObject({ visit_count: 2, pages_viewed: 3, referrer: 'https://www.google.com/' });
    } finally {
      await ctx.close();
    }
  });

  it('counts SPA navigations: pushState and replaceState when the path changes, back and forward', async () => {
    const site = await newSite(generic());
    const ctx = await visitor();
    try {
      const page = await ctx.newPage();
      const beacons = watchBeacons(page);
      await page.goto(pageUrl(site));
      await expectEvents(site, 1);
      await page.evaluate(() => history.pushState({}, '', '/pricing'));
      await page.evaluate(() => history.replaceState({}, '', '/pricing?plan=team')); // same path: not a page
      await page.evaluate(() => history.replaceState({}, '', '/plans')); // a new path: a page
      await page.evaluate(() => history.pushState({}, '', '/plans#faq')); // same path: not a page
      await expectEvents(site, 3);
      await page.evaluate(() => history.back()); // to /plans (the hash entry's path is the same)
      await page.evaluate(() => history.back()); // to /
      await expect.poll(() => page.evaluate(() => location.pathname)).toBe('/');
      await page.evaluate(() => history.forward());
      await expect.poll(() => page.evaluate(() => location.pathname)).toBe('/plans');
      const rows = await expectEvents(site, 5);
      expect(pageviews(rows)).toEqual(['/', '/', '/plans', '/plans', '/pricing']);
      expect(new Set(rows.map((r) => r.session_id)).size).toBe(1);
      // The generic file sent to the origin it was loaded from.
      expect(beacons.sent.every((u) => u === `http://${API_HOST}:${port}/functions/v1/collect`)).toBe(true);
      expect(await visitorOf(site)).toMatchObject({ visit_count: 1, pages_viewed: 5 });
    } finally {
      await ctx.close();
    }
  });

  it('counts a page restored from the back/forward cache', async () => {
    const site = await newSite(perSite());
    const ctx = await visitor();
    try {
      const page = await ctx.newPage();
      await page.goto(pageUrl(site));
      await expectEvents(site, 1);
      await page.evaluate(() => {
        (window as unknown as PageGlobals).marker = 1;
      });
      await page.goto(pageUrl(site, '/other'));
      await expectEvents(site, 2);
      // A restore fires pageshow (persisted) but no load event, so wait for the commit only.
      await page.goBack({ waitUntil: 'commit' });
      await expect.poll(() => page.evaluate(() => location.pathname)).toBe('/');
      const restored = await page.evaluate(() => (window as unknown as PageGlobals).marker === 1);
      if (!restored) {
        // The page was loaded afresh (which counts it too): prove the restore path with the event a restore fires.
        console.warn('tracker-browser: Chromium did not restore from the back/forward cache; dispatching pageshow (persisted)');
        await expectEvents(site, 3);
        await page.evaluate(() => window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true })));
        expect(pageviews(await expectEvents(site, 4))).toEqual(['/', '/', '/', '/other']);
        return;
      }
      const rows = await expectEvents(site, 3);
      expect(pageviews(rows)).toEqual(['/', '/', '/other']);
      expect(new Set(rows.map((r) => r.session_id)).size).toBe(1);
      expect(await visitorOf(site)).toMatchObject({ visit_count: 1, pages_viewed: 3 });
    } finally {
      await ctx.close();
    }
  });

  it('sends to data-api instead when the tag names an endpoint (a reverse proxy on the site’s own domain)', async () => {
    const site = await newSite((s) => generic(` data-api="http://${s.domain}:${port}/functions/v1/collect"`)(s));
    const ctx = await visitor();
    try {
      const page = await ctx.newPage();
      const beacons = watchBeacons(page);
      await page.goto(pageUrl(site));
      await expectEvents(site, 1);
      expect(beacons.sent).toEqual([`http://${site.domain}:${port}/functions/v1/collect`]);
    } finally {
      await ctx.close();
    }
  });

  it('accrues engaged time only while visible, focused and used in the last 30 s, in beacons of at least 3 s', async () => {
    const site = await newSite(perSite());
    const ctx = await visitor();
    try {
      // The page's visibility and focus, under the test's control (headless Chromium is always both).
      await ctx.addInitScript(() => {
        let visible = true;
        let focused = true;
        Object.defineProperty(Document.prototype, 'visibilityState', { configurable: true, get: () => (visible ? 'visible' : 'hidden') });
        Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => !visible });
        Document.prototype.hasFocus = () => focused;
        (window as unknown as PageGlobals).setPageState = (v, f) => {
          const visibilityChanged = v !== visible;
          const focusChanged = f !== focused;
          visible = v;
          focused = f;
          if (focusChanged) window.dispatchEvent(new FocusEvent(f ? 'focus' : 'blur'));
          if (visibilityChanged) document.dispatchEvent(new Event('visibilitychange'));
        };
      });
      const page = await ctx.newPage();
      // The page's clock stands still unless the test moves it, so every expected figure is exact.
      await page.clock.install({ time: new Date('2026-03-02T09:00:00Z') });
      await page.clock.pauseAt(new Date('2026-03-02T09:00:01Z'));
      await page.goto(pageUrl(site)); // arriving counts as input
      await expectEvents(site, 1);
      const state = (visible: boolean, focused: boolean) =>
        page.evaluate(([v, f]) => (window as unknown as PageGlobals).setPageState(v, f), [visible, focused] as const);
      let x = 10;
      const input = () => {
        x += 7;
        return page.mouse.move(x, 40); // a real pointermove
      };

      await page.clock.runFor(10_000); // engaged: 10 s
      await page.clock.runFor(40_000); // only 20 s more: the arrival is 30 s old at 30 s
      await input();
      await page.clock.runFor(10_000); // 10 s more: 40 s
      await state(true, false); // blur: a beacon of 40 s
      await page.clock.runFor(20_000); // unfocused: nothing
      await input();
      await state(true, true);
      await page.clock.runFor(5_000); // 5 s more
      await state(false, true); // hidden: a beacon of 5 s
      await page.clock.runFor(60_000); // hidden: nothing
      await state(true, true);
      await page.clock.runFor(10_000); // visible and focused, but the last input is 85 s old: nothing
      await input();
      await page.clock.runFor(2_000); // 2 s more
      await state(true, false); // blur: under 3 s, so no beacon; kept for the next one
      await state(true, true);
      await page.clock.runFor(2_000); // 2 s more: 4 s waiting
      await state(false, true); // hidden: a beacon of 4 s
      await state(true, true);
      await input();
      await page.clock.runFor(5_000);
      await page.evaluate(() => history.pushState({}, '', '/pricing')); // the time so far (5 s), then the page view
      await input();
      await page.clock.runFor(3_000);
      await page.goto(pageUrl(site, '/other')); // pagehide: the last 3 s, under the page they were spent on

      const rows = await expectEvents(site, 8);
      // Beacons are requests that can be in flight at once (the one sent just before an SPA page view
      // and the page view itself; two engagement beacons a few real milliseconds apart on a loaded
      // machine), so the server may store them in either order: compare as sets, and the engaged
      // times per page as sorted lists.
      const byKindAndPath = (list: string[][]) => list.map((r) => r.join(' ')).sort();
      expect(byKindAndPath(rows.map((r) => [r.kind, r.path]))).toEqual(
        byKindAndPath([
          ['pageview', '/'],
          ['engagement', '/'],
          ['engagement', '/'],
          ['engagement', '/'],
          ['engagement', '/'],
          ['pageview', '/pricing'],
          ['engagement', '/pricing'],
          ['pageview', '/other'],
        ]),
      );
      const want: Record<string, number[]> = { '/': [4_000, 5_000, 5_000, 40_000], '/pricing': [3_000] };
      for (const [path, expected] of Object.entries(want)) {
        const got = rows
          .filter((r) => r.kind === 'engagement' && r.path === path)
          .map((r) => r.active_ms ?? 0)
          .sort((a, b) => a - b);
        expect(got).toHaveLength(expected.length);
        got.forEach((ms, i) => {
          expect(Math.abs(ms - (expected[i] ?? 0)), `${path} beacon ${i}: ${ms} ms`).toBeLessThanOrEqual(250);
        });
      }
      const stored = await visitorOf(site);
      expect(Math.abs((stored?.active_ms ?? 0) - 57_000)).toBeLessThanOrEqual(500);
      expect(stored).toMatchObject({ visit_count: 1, pages_viewed: 3 });
    } finally {
      await ctx.close();
    }
  });

  it.each([
    ['Do Not Track', () => Object.defineProperty(Navigator.prototype, 'doNotTrack', { get: () => '1' })],
    ['Global Privacy Control', () => Object.defineProperty(Navigator.prototype, 'globalPrivacyControl', { get: () => true })],
  ])('sends nothing at all under %s', async (_name, signal) => {
    const site = await newSite(perSite());
    const ctx = await visitor();
    try {
      await ctx.addInitScript(signal);
      const page = await ctx.newPage();
      const beacons = watchBeacons(page);
      await page.goto(pageUrl(site));
      await page.evaluate(() => history.pushState({}, '', '/pricing'));
      await page.mouse.move(30, 30);
      await consent(page, 'grant'); // a banner's grant does not override the browser's signal
      await page.goto(pageUrl(site, '/other'));
      expect(await consent(page, 'status')).toBe('off');
      await expectEvents(site, 0);
      expect(beacons.sent).toEqual([]);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    } finally {
      await ctx.close();
    }
  });

  it('with data-consent="required", queues until grant() and stores nothing on the device before it', async () => {
    const site = await newSite(perSite(' data-consent="required"'));
    const ctx = await visitor();
    try {
      const page = await ctx.newPage();
      await page.goto(pageUrl(site));
      await page.evaluate(() => history.pushState({}, '', '/pricing'));
      expect(await consent(page, 'status')).toBe('pending');
      await expectEvents(site, 0);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
      await consent(page, 'grant');
      expect(await consent(page, 'status')).toBe('granted');
      const rows = await expectEvents(site, 2);
      expect(pageviews(rows)).toEqual(['/', '/pricing']);
      await page.evaluate(() => history.pushState({}, '', '/plans'));
      expect(pageviews(await expectEvents(site, 3))).toEqual(['/', '/plans', '/pricing']);
    } finally {
      await ctx.close();
    }
  });

  it('drops the queue on revoke() and sends nothing until a later grant()', async () => {
    const site = await newSite(generic(' data-consent="required"'));
    const ctx = await visitor();
    try {
      const page = await ctx.newPage();
      await page.goto(pageUrl(site));
      await page.evaluate(() => history.pushState({}, '', '/pricing'));
      await consent(page, 'revoke');
      await page.evaluate(() => history.pushState({}, '', '/plans'));
      expect(await consent(page, 'status')).toBe('denied');
      await expectEvents(site, 0);
      await consent(page, 'grant');
      await page.evaluate(() => history.pushState({}, '', '/contact'));
      expect(pageviews(await expectEvents(site, 1))).toEqual(['/contact']);
    } finally {
      await ctx.close();
    }
  });

  it('sends nothing under automation (navigator.webdriver) by default', async () => {
    const site = await newSite(perSite());
    const ctx = await visitor({ automation: true });
    try {
      const page = await ctx.newPage();
      const beacons = watchBeacons(page);
      await page.goto(pageUrl(site));
      expect(await page.evaluate(() => navigator.webdriver)).toBe(true);
      await page.evaluate(() => history.pushState({}, '', '/pricing'));
      expect(await consent(page, 'status')).toBe('off');
      await expectEvents(site, 0);
      expect(beacons.sent).toEqual([]);
    } finally {
      await ctx.close();
    }
  });

  it.each([
    ['data-allow-automation on the tag', perSite(' data-allow-automation'), undefined],
    ['localStorage.sightline_allow_automation', perSite(), () => localStorage.setItem('sightline_allow_automation', '1')],
  ])('under automation with %s, sends events the server stores as a bot’s, never a visitor', async (_name, snippet, init) => {
    const site = await newSite(snippet);
    const ctx = await visitor({ automation: true });
    try {
      if (init) await ctx.addInitScript(init);
      const page = await ctx.newPage();
      await page.goto(pageUrl(site));
      await page.evaluate(() => history.pushState({}, '', '/pricing'));
      const rows = await expectEvents(site, 2);
      expect(rows.map((r) => r.is_bot)).toEqual([true, true]);
      expect(await visitorOf(site)).toBeUndefined();
    } finally {
      await ctx.close();
    }
  });
});
