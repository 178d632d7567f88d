import { mkdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { sweepWebhookDeliveries, workTrackerQueue } from '@sightline/core';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { CHROMIUM, chromiumFor, type LoopbackHost, startLoopbackHost } from './support/browser.ts';
import { realIpDeps } from './support/ip.ts';
import { capturingLogger, type LogLine } from './support/log.ts';
import { REPO_ROOT } from './support/process.ts';
import { startReceiver } from './support/receiver.ts';
import { seedPartner, uniqueDomain } from './support/seed.ts';
import { pageView } from './support/tracker.ts';
import { seedIdentifiedVisitor } from './support/visitors.ts';

/**
 * The console in a real Chromium, against the Node host over real HTTP on 127.0.0.1 (Postgres when
 * DATABASE_URL is set, else the embedded database): every claim about the API's state is checked
 * against the API itself, never against the page. Each page is checked with axe-core and
 * photographed at 360 px and 1280 px into tests/.screenshots/console/ (git-ignored).
 */
const haveChromium = chromiumFor('console-browser');

const SHOTS = path.join(REPO_ROOT, 'tests/.screenshots/console');
const AXE_SOURCE = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let env: TestEnv;
let host: LoopbackHost;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let base = '';
let partnerKey = '';
let logLines: LogLine[] = [];
/** What the page printed and every URL it asked for, to prove a key never reached either. */
const pageConsole: string[] = [];
const requestedUrls: string[] = [];
/** Every key the session handled: the partner's, the child's first and its rotated one. */
const keys: string[] = [];
let receiver: Awaited<ReturnType<typeof startReceiver>>;
/** While true, the receiver answers 503: an event then fails its four attempts. */
let receiverDown = false;

/** The child the partner creates in the console, as later steps need it. */
const child = { id: '', key: '', domain: uniqueDomain('console') };

beforeAll(async () => {
  if (!haveChromium) return;
  const { log, lines } = capturingLogger();
  // The shop's page reaches the API through a proxy on 127.0.0.1 that says who the visitor is (as a
  // load balancer would): its beacons then come from a company's address the local data knows.
  env = await createTestEnv({ log, trustedProxies: ['127.0.0.1/32'], ip: realIpDeps({ providers: [], timeoutMs: 300 }) });
  logLines = lines;
  receiver = await startReceiver((_q, res) => (receiverDown ? res.writeHead(503).end('down') : res.end('ok')));
  partnerKey = (await seedPartner(env.deps, { quota: 1000, topup: 500 })).key;
  keys.push(partnerKey);
  host = await startLoopbackHost({ log, fetch: (req, bindings) => env.app.fetch(req, bindings) });
  base = `http://127.0.0.1:${host.port}`;
  await mkdir(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.on('console', (m) => pageConsole.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => pageConsole.push(`pageerror: ${e.message}`));
  page.on('request', (r) => requestedUrls.push(r.url()));
}, 60_000);

afterAll(async () => {
  if (!haveChromium) return;
  await browser?.close();
  await host?.close();
  await receiver?.close();
  await env?.close();
});

/** axe-core in the page: no serious or critical violation. */
async function accessible(name: string) {
  await page.evaluate(await AXE_SOURCE);
  const result = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run(ctx: Document): Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown }[] }[] }> };
      }
    ).axe;
    const r = await axe.run(document);
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  const bad = result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad, `${name}: ${JSON.stringify(bad)}`).toEqual([]);
}

/** The page at 360 px and 1280 px wide, checked with axe at each, written for a reviewer. */
async function review(name: string) {
  for (const width of [360, 1280]) {
    await page.setViewportSize({ width, height: 800 });
    await accessible(`${name} at ${width}px`);
    await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
}

async function signIn(key: string) {
  await page.goto(`${base}/console/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

const apiCall = (key: string, name: string, opts: Parameters<typeof call>[2] = {}) => call(env, name, { key, ...opts });

describe.skipIf(!haveChromium)('the console in Chromium', () => {
  it('a wrong key is refused with the API’s own words, and a master key opens the partner view', async () => {
    await page.goto(`${base}/console`);
    expect(new URL(page.url()).pathname).toBe('/console/');
    await review('sign-in');
    await signIn('sl_not_a_real_key');
    const refused = await apiCall('sl_not_a_real_key', 'partner-pool-state');
    expect(refused.status).toBe(401);
    await expect.poll(() => page.getByRole('alert').textContent()).toBe(refused.body.error);
    await signIn(partnerKey);
    await page.getByRole('heading', { name: 'Pool' }).waitFor();
    await page.getByRole('heading', { name: 'Children' }).waitFor();
    expect(await page.locator('[data-fact="pool-topup"]').textContent()).toBe((500).toLocaleString('en-US'));
    await review('partner-overview');
  }, 60_000);

  it('create a child: an error sits beside its field, then the key is shown once and works', async () => {
    await page.getByRole('link', { name: 'New child' }).first().click();
    await page.getByLabel('Name', { exact: true }).fill('Console Shop');
    await page.getByLabel(/^Domain/).fill('https://not-a-bare-host.example.com/path');
    await page.getByRole('button', { name: 'Create child' }).click();
    const fieldError = page.locator('#f-domain-error');
    await fieldError.waitFor();
    expect(await fieldError.textContent()).toMatch(/^domain must be a bare host/);
    expect(await page.getByLabel(/^Domain/).getAttribute('aria-invalid')).toBe('true');
    await review('create-child-error');

    await page.getByLabel(/^Domain/).fill(child.domain);
    await page.getByLabel('Monthly ID quota').fill('50');
    await page.getByRole('button', { name: 'Create child' }).click();
    await page.getByText('They will not be shown again').waitFor();
    child.key = (await page.locator('code[data-secret="API key"]').textContent()) ?? '';
    keys.push(child.key);
    expect(child.key).toMatch(/^sl_/);
    expect(await page.locator('code[data-secret="Install snippet"]').textContent()).toMatch(
      /<script async src="http:\/\/127\.0\.0\.1:\d+\/t\/[0-9a-f-]+\.js"><\/script>/,
    );
    expect(await page.getByRole('button', { name: 'Copy API key' }).count()).toBe(1);
    await review('create-child-created');
    // The key the page showed is the child's: it reads its own visitors.
    expect((await apiCall(child.key, 'list-visitors')).status).toBe(200);
    const listed = await apiCall(partnerKey, 'partner-list-children', { query: { include_inactive: 'true' } });
    const children = listed.body.children as { child_api_key_id: string; domain: string }[];
    child.id = children.find((c) => c.domain === child.domain)?.child_api_key_id ?? '';
    expect(child.id).not.toBe('');

    // Shown once: back on the form, then on the child's page, the key is nowhere.
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('link', { name: 'New child' }).first().click();
    await page.getByRole('button', { name: 'Create child' }).waitFor();
    expect(await page.content()).not.toContain(child.key);
  }, 60_000);

  it('a child’s page: transfer top-up changes both balances; rotating makes the old key fail', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('searchbox', { name: 'Search' }).fill('console shop');
    await page.getByRole('link', { name: 'Console Shop' }).click();
    await page.getByRole('heading', { name: 'Console Shop' }).waitFor();
    await page.locator('[data-install="waiting"]').waitFor();
    await page.locator('[data-cause="consent_pending"]').waitFor();
    // Asked to read the site's page, it says what it found: here, that the page cannot be read.
    await page.getByRole('button', { name: 'Check the site’s page' }).click();
    await page.locator('[data-page-status]').waitFor();
    expect(await page.locator('[data-cause]').first().getAttribute('data-cause')).toBe('page_unreachable');
    await review('child-page');

    // The install check turns green by itself when the first page view arrives.
    const snippet = (await page.locator('code[data-secret="Install snippet"]').textContent()) ?? '';
    const trackingId = /\/t\/([0-9a-f-]+)\.js/.exec(snippet)?.[1] ?? '';
    await pageView(env, { key: child.key, apiKeyId: child.id, trackingId, domain: child.domain, websiteId: '' }, '198.51.100.44');
    await page.locator('[data-install="installed"]').waitFor({ timeout: 15_000 });
    expect(await page.locator('[data-install]').textContent()).toMatch(/^Installed: the last page view arrived/);

    await page.getByLabel('IDs from the pool’s top-up').fill('120');
    await page.getByRole('button', { name: 'Transfer' }).click();
    await page.getByText(/^Transferred 120 IDs/).waitFor();
    await expect.poll(() => page.locator('[data-fact="child-topup"]').textContent()).toBe('120');
    const pool = await apiCall(partnerKey, 'partner-pool-state');
    expect((pool.body.pool as { topup_balance: number }).topup_balance).toBe(380);
    const listed = await apiCall(partnerKey, 'partner-list-children', { query: { child_api_key_id: child.id, include_inactive: 'true' } });
    expect((listed.body.children as { topup_balance: number }[])[0]?.topup_balance).toBe(120);

    await page.getByRole('button', { name: 'Rotate key' }).click();
    await page.getByRole('button', { name: 'Yes, rotate the key' }).click();
    await page.getByText('They will not be shown again').waitFor();
    const rotated = (await page.locator('code[data-secret="New API key"]').textContent()) ?? '';
    keys.push(rotated);
    expect(rotated).toMatch(/^sl_/);
    expect(rotated).not.toBe(child.key);
    expect((await apiCall(child.key, 'list-visitors')).status).toBe(401);
    expect((await apiCall(rotated, 'list-visitors')).status).toBe(200);
    child.key = rotated;
  }, 60_000);

  it('release, confirmed: the child leaves the partner and its top-up returns to the pool', async () => {
    const leaving = await apiCall(partnerKey, 'partner-create-child-key', { body: { name: 'Leaving Shop', domain: uniqueDomain('leaving') } });
    const leavingId = (leaving.body.child as { api_key_id: string }).api_key_id;
    expect((await apiCall(partnerKey, 'partner-transfer-topup', { body: { child_api_key_id: leavingId, amount: 30 } })).status).toBe(200);
    const poolBefore = ((await apiCall(partnerKey, 'partner-pool-state')).body.pool as { topup_balance: number }).topup_balance;
    await page.goto(`${base}/console/#/children/${leavingId}`);
    await page.getByRole('heading', { name: 'Leaving Shop' }).waitFor();
    await page.getByRole('button', { name: 'Release child' }).click();
    await page.getByRole('button', { name: 'Yes, release the child' }).click();
    await page.getByText(/The child is released/).waitFor();
    expect(await page.getByText(/The child is released/).textContent()).toContain('30 top-up IDs returned');
    const poolAfter = ((await apiCall(partnerKey, 'partner-pool-state')).body.pool as { topup_balance: number }).topup_balance;
    expect(poolAfter).toBe(poolBefore + 30);
    const listed = await apiCall(partnerKey, 'partner-list-children', { query: { child_api_key_id: leavingId, include_inactive: 'true' } });
    expect(listed.body.children).toEqual([]);
  }, 60_000);

  it('events: set the partner webhook, see a delivery, replay a delivered and a failed one to a receiver on 127.0.0.1', async () => {
    const hooks = receiver;
    await page.getByRole('link', { name: 'Events' }).click();
    await page.getByLabel(/^URL for child\.\* events/).fill(hooks.url);
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText(`Events go to ${hooks.url}.`).waitFor();
    const secret = (await page.locator('code[data-secret="Partner webhook secret"]').textContent()) ?? '';
    expect(secret.length).toBeGreaterThanOrEqual(8);
    keys.push(secret);

    // An action after the webhook is set: its event is delivered to the receiver.
    const renamed = await apiCall(partnerKey, 'partner-update-child', { body: { child_api_key_id: child.id, name: 'Console Shop Ltd' } });
    expect(renamed.status).toBe(200);
    const updates = () => hooks.received.filter((r) => r.headers['x-service-event'] === 'child.updated');
    await expect.poll(() => updates().length, { timeout: 10_000 }).toBe(1);

    await page.getByLabel('Delivery').selectOption('delivered');
    const replay = page.getByRole('button', { name: /^Replay child\.updated/ });
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh' }).click();
          return replay.count();
        },
        { timeout: 10_000 },
      )
      .toBe(1);
    await page.locator('details summary').first().click();
    await review('events');
    await replay.click();
    await page.getByText('Queued for delivery again.').waitFor();
    await expect.poll(() => updates().length, { timeout: 10_000 }).toBe(2);
    // The same event, the same bytes.
    expect(updates()[1]?.body).toBe(updates()[0]?.body);

    // An event that fails all four attempts (the receiver down; the sweep's clock moved past each
    // retry), then replayed from the console once the receiver is back: it gets it.
    receiverDown = true;
    const renamedBack = await apiCall(partnerKey, 'partner-update-child', { body: { child_api_key_id: child.id, name: 'Console Shop' } });
    expect(renamedBack.status).toBe(200);
    await expect.poll(() => updates().length, { timeout: 10_000 }).toBe(3);
    // The receiver has the first attempt before its failure is recorded: wait for the delivery run
    // to record it, or the first sweep finds the event still leased and sends nothing.
    await env.settle();
    for (const minutes of [2, 8, 40]) {
      await sweepWebhookDeliveries({ ctx: env.deps, input: { now: new Date(Date.now() + minutes * 60_000) } });
    }
    expect(updates()).toHaveLength(6);
    receiverDown = false;
    await page.getByLabel('Delivery').selectOption('failed');
    const failed = page.getByRole('button', { name: /^Replay child\.updated/ });
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh' }).click();
          return failed.count();
        },
        { timeout: 10_000 },
      )
      .toBe(1);
    await failed.click();
    await page.getByText('Queued for delivery again.').waitFor();
    await expect.poll(() => updates().length, { timeout: 10_000 }).toBe(7);
    expect(updates()[6]?.body).toBe(updates()[2]?.body);
  }, 60_000);

  it('white label: the partner sets a brand, and its header wears it at once', async () => {
    await page.getByRole('link', { name: 'Brand' }).click();
    await page.getByLabel('Brand name (empty: none)').fill('Agency One');
    await page.getByLabel('Accent colour').fill('#7a1fa2');
    await page.getByLabel(/^Logo URL/).fill('https://logo.example.com/agency-one.png');
    await page.getByRole('button', { name: 'Save brand' }).click();
    await page.getByText('Brand saved.').waitFor();
    await expect.poll(() => page.locator('[data-brand-name]').textContent()).toBe('Agency One');
    const brand = await apiCall(partnerKey, 'console-brand');
    expect(brand.body.brand).toEqual({ brand_name: 'Agency One', accent_color: '#7a1fa2', logo_url: 'https://logo.example.com/agency-one.png' });
    await review('partner-brand');
  }, 60_000);

  it('the site view: a child’s key lists its identified visitor, and a visitor has its page', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    const listed = await apiCall(partnerKey, 'partner-list-children', { query: { child_api_key_id: child.id } });
    const websiteOf = await env.db<{ id: string }>`select id from websites where api_key_id = ${child.id} and domain = ${child.domain}`;
    expect(listed.status).toBe(200);
    await seedIdentifiedVisitor(env.db, { websiteId: websiteOf[0]?.id ?? '', apiKeyId: child.id }, '198.51.100.7', 'Acme Widgets Ltd');

    await signIn(child.key);
    await page.getByRole('heading', { name: 'Identified visitors' }).waitFor();
    // The child wears its partner's brand under its own brand_name (its name when it was created), never Sightline's.
    await expect.poll(() => page.locator('[data-brand-name]').textContent()).toBe('Console Shop');
    expect(await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim())).toBe('#7a1fa2');
    expect(await page.locator('header img.logo').getAttribute('src')).toBe('https://logo.example.com/agency-one.png');
    expect(await page.locator('header').textContent()).not.toContain('Sightline');
    const row = page.getByRole('link', { name: 'Acme Widgets Ltd' });
    await row.waitFor();
    // IDs used against the quota, as key-usage gives them to the child's own key.
    const usage = await apiCall(child.key, 'key-usage');
    expect(usage.body).toMatchObject({ metered_by: 'child_subscription', monthly_id_quota: 50, topup_balance: 120 });
    await expect.poll(() => page.locator('[data-fact="ids-available"]').textContent()).toBe(String(usage.body.available));
    // The charts: the traffic mix as visitor-stats counts it.
    const stats = await apiCall(child.key, 'visitor-stats');
    expect((stats.body.traffic_mix as Record<string, number>).business).toBe(1);
    await expect.poll(() => page.locator('[data-mix="business"]').textContent()).toMatch(/\b1$/);
    await page.getByRole('img', { name: /companies identified over \d+ days/ }).waitFor();
    const fromApi = await apiCall(child.key, 'list-visitors');
    const visitor = (fromApi.body.visitors as { company_name: string; domain: string }[])[0];
    expect(visitor?.company_name).toBe('Acme Widgets Ltd');
    expect(await page.getByRole('row', { name: /Acme Widgets Ltd/ }).textContent()).toContain(visitor?.domain ?? '');
    await review('site-visitors');

    await page.getByRole('searchbox', { name: 'Search' }).fill('no-such-company');
    await page.getByRole('searchbox', { name: 'Search' }).press('Enter');
    await page.getByText('No identified visitors in this range.').waitFor();
    await page.getByRole('searchbox', { name: 'Search' }).fill('');
    await page.getByRole('searchbox', { name: 'Search' }).press('Enter');
    await row.click();
    await page.getByRole('heading', { name: 'Acme Widgets Ltd' }).waitFor();
    expect(await page.getByText('198.51.100.7').count()).toBe(1);
    // Its activity (visitor-activity): a seeded visitor has no raw page views and no ICP scores.
    await page.getByRole('heading', { name: 'ICP fit' }).waitFor();
    await page.getByText('No active ICP has scored this visitor.').waitFor();
    await page.getByText('No page views are kept for it any more.').waitFor();
    expect(await page.locator('[data-crm]').textContent()).toBe('Not pushed');
    await review('site-visitor');
  }, 60_000);

  it('the site view: a page carrying the snippet sends beacons, and its visitor appears in the feed with its company', async () => {
    // Apple's own network (AS714): a business in the shipped data.
    const visitor = '17.253.0.99';
    const [website] = await env.db<{ tracking_script_id: string }>`
      select tracking_script_id::text from websites where api_key_id = ${child.id} and domain = ${child.domain}`;
    // One server on 127.0.0.1: the shop's page at the child's domain, and for everything else the
    // API behind a proxy that adds the visitor's address (TRUSTED_PROXIES believes 127.0.0.1).
    const shop = http.createServer(async (req, res) => {
      if ((req.headers.host ?? '').startsWith(child.domain) && req.url === '/') {
        const origin = `http://${req.headers.host}`;
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          `<!doctype html><html><head><title>Shop</title><script async src="${origin}/t/${website?.tracking_script_id}.js"></script></head><body><h1>Shop</h1></body></html>`,
        );
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'connection') headers.set(k, v);
      headers.set('x-forwarded-for', visitor);
      const answer = await fetch(`${base}${req.url}`, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
      res.writeHead(answer.status, Object.fromEntries([...answer.headers].filter(([k]) => k !== 'content-encoding' && k !== 'content-length')));
      res.end(Buffer.from(await answer.arrayBuffer()));
    });
    await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
    const shopPort = (shop.address() as AddressInfo).port;
    // A visitor's browser, not an automated one: the tracker stays off under navigator.webdriver
    // (and an automated beacon is a bot's), so this Chromium does not say it is driven.
    const visitorBrowser = await chromium.launch({
      executablePath: CHROMIUM,
      ignoreDefaultArgs: ['--enable-automation'],
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-blink-features=AutomationControlled',
        `--host-resolver-rules=MAP ${child.domain} 127.0.0.1`,
      ],
    });
    try {
      const tab = await visitorBrowser.newPage({ userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:130.0) Gecko/20100101 Firefox/130.0' });
      expect(await tab.evaluate(() => navigator.webdriver)).toBe(false);
      await tab.goto(`http://${child.domain}:${shopPort}/`);
      await expect
        .poll(
          async () => (await env.db<{ n: number }>`select count(*)::int as n from tracker_events where ip = ${visitor}::inet and not is_bot`)[0]?.n,
          {
            timeout: 15_000,
          },
        )
        .toBeGreaterThan(0);
    } finally {
      await visitorBrowser.close();
      shop.closeAllConnections();
      await new Promise((r) => shop.close(r));
    }
    await workTrackerQueue({ ctx: env.deps, input: {} });
    // The child's feed, opened afresh: the visitor with the company its address names.
    const visitorPage = page.url();
    // A reload, whatever the page showed: a goto that changes nothing but the hash would not load the feed again.
    await page.goto(`${base}/console/#/`);
    await page.reload();
    await page.getByRole('link', { name: 'Apple Inc.' }).waitFor({ timeout: 15_000 });
    expect(await page.getByRole('row', { name: /Apple Inc\./ }).textContent()).toContain('apple.com');
    // Back where the next step starts: the visitor page it leaves from.
    await page.goto(visitorPage);
    await page.getByRole('link', { name: 'Back to the visitors' }).waitFor();
  }, 90_000);

  it('the site view: watch a visitor by keyboard, filter by watched, and export the filter as CSV', async () => {
    const [website] = await env.db<{ id: string }>`select id from websites where api_key_id = ${child.id} and domain = ${child.domain}`;
    await seedIdentifiedVisitor(env.db, { websiteId: website?.id ?? '', apiKeyId: child.id }, '198.51.100.8', 'Beta Gadgets Inc');
    await page.getByRole('link', { name: 'Back to the visitors' }).click();
    await page.getByRole('link', { name: 'Beta Gadgets Inc' }).waitFor();
    const watch = page.getByRole('button', { name: 'Watch Acme Widgets Ltd' });
    expect(await watch.getAttribute('aria-pressed')).toBe('false');
    await watch.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => watch.getAttribute('aria-pressed')).toBe('true');
    expect(await page.getByRole('button', { name: 'Pin Acme Widgets Ltd' }).getAttribute('aria-pressed')).toBe('false');
    // The API holds the mark.
    const watched = await apiCall(child.key, 'list-visitors', { query: { watched: 'true' } });
    expect((watched.body.visitors as { company_name: string; is_watched: boolean }[]).map((v) => [v.company_name, v.is_watched])).toEqual([
      ['Acme Widgets Ltd', true],
    ]);

    await page.getByLabel('Marked').selectOption('watched');
    await expect.poll(() => page.getByRole('link', { name: 'Beta Gadgets Inc' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Acme Widgets Ltd' }).waitFor();
    await review('site-visitors-watched');

    // The download is the feed's filter, fetched with the key in a header and saved from a Blob URL.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^visitors-all-\d{4}-\d{2}-\d{2}\.csv$/);
    expect(download.url()).toMatch(/^blob:/);
    const [header, ...records] = (await readFile(await download.path(), 'utf8')).split('\r\n').filter(Boolean);
    const columns = header?.split(',') ?? [];
    const cells = records.map((r) => r.split(','));
    const at = (name: string) => cells.map((c) => c[columns.indexOf(name)]);
    const rows = watched.body.visitors as { ip: string; company_name: string; raw_id: string }[];
    expect(at('ip')).toEqual(rows.map((v) => v.ip));
    expect(at('company_name')).toEqual(rows.map((v) => v.company_name));
    expect(at('raw_id')).toEqual(rows.map((v) => v.raw_id));
    expect(at('is_watched')).toEqual(['true']);
  }, 60_000);

  it('the site view: connect a Slack channel, whose URL is never shown again, and see it listed', async () => {
    const panel = page.locator('section[aria-labelledby="integrations-h"]');
    const hook = `${receiver.url}/T000/B000/console-secret-path`;
    await panel.getByLabel('Destination').selectOption('slack');
    await panel.getByLabel('Name').fill('Sales channel');
    await panel.getByLabel('The channel’s incoming-webhook URL').fill(hook);
    await panel.getByRole('button', { name: 'Connect' }).click();
    await panel.locator('[data-integration="Sales channel"]').waitFor();
    expect(await panel.locator('[data-integration="Sales channel"] [data-status]').textContent()).toBe('Active');
    expect(await page.content()).not.toContain('console-secret-path');
    const listed = await apiCall(child.key, 'integrations');
    expect((listed.body.integrations as { name: string; kind: string }[]).map((i) => [i.name, i.kind])).toEqual([['Sales channel', 'slack']]);
    await review('site-integrations');
  }, 60_000);

  it('no key reaches localStorage, a cookie, a URL or a log', async () => {
    expect(keys.length).toBeGreaterThanOrEqual(4);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await context.cookies()).toEqual([]);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    // Signed in now: the key is in this tab's sessionStorage, and only there.
    expect(await page.evaluate(() => Object.keys(sessionStorage))).toEqual(['sightline.console.key']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    const history = await page.evaluate(() => location.href);
    const logged = JSON.stringify(logLines);
    const printed = pageConsole.join('\n');
    for (const key of keys) {
      expect(history).not.toContain(key);
      expect(requestedUrls.filter((u) => u.includes(key))).toEqual([]);
      expect(logged).not.toContain(key);
      expect(printed).not.toContain(key);
    }
    expect(requestedUrls.length).toBeGreaterThan(10);
    // Nothing the CSP refused, and no script error.
    expect(pageConsole.filter((l) => /Content Security Policy|pageerror/.test(l))).toEqual([]);
  }, 60_000);
});
