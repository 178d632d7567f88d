import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { grantCredits } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildEdgeData } from '../packages/host/src/edge-data.ts';
import { call, type Json, type TestEnv } from './support/app.ts';
import { usingPostgres } from './support/db.ts';
import { DENO, type DenoFunctionServer, envForDeno, SERVE_SCRIPT, startDenoFunctions } from './support/deno-functions.ts';
import { REPO_ROOT } from './support/process.ts';
import { createChildVia, seedDirectAccount, seedPartner, uniqueDomain } from './support/seed.ts';

/**
 * The Supabase entrypoints run the same core under Deno, where modules resolve through npm:
 * specifiers and crypto, the HTTP server and the database drivers are Deno's. This serves
 * partner-pool-state under Deno against the database the Node app reads, and requires the same
 * answers.
 */

interface Answer {
  status: number;
  body: Json;
  allow: string | null;
}

async function fromNode(env: TestEnv, opts: Parameters<typeof call>[2]): Promise<Answer> {
  const res = await call(env, 'partner-pool-state', opts);
  return { status: res.status, body: res.body, allow: res.headers.get('allow') };
}

async function fromDeno(server: DenoFunctionServer, init: { key?: string; method?: string }): Promise<Answer> {
  const res = await fetch(`${server.origin}/partner-pool-state`, {
    method: init.method ?? 'GET',
    headers: init.key === undefined ? {} : { 'x-access-key': init.key },
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: (await res.json()) as Json, allow: res.headers.get('allow') };
}

let env: TestEnv | undefined;
let dataDir: string | undefined;
let ipDataDir: string | undefined;
let deno: DenoFunctionServer | undefined;
let key = '';
let lookupKey = '';
let tracker = { tracking_script_id: '', domain: '', website_id: '', key: '' };
const SWEEP_SECRET = 'deno-smoke-sweep-secret-0123456789abcdef';
/**
 * The operator's own database (IPinfo's Lite sample), named relative to the working directory as an
 * operator would; no query leaves the machine (no resolver or registry to ask here).
 */
const DENO_IP_SETTINGS = { IP_DATABASES: 'tests/fixtures/ipinfo-lite/ipinfo_lite_sample.mmdb', RDNS: '0', RDAP: '0' };

/** The server beforeAll started; a test reaching here without one has nothing to compare against. */
function running(): DenoFunctionServer {
  if (!deno) throw new Error('the Deno server did not start (see beforeAll)');
  return deno;
}
const node: Record<'state' | 'noKey' | 'post', Answer | undefined> = { state: undefined, noKey: undefined, post: undefined };

beforeAll(async () => {
  ({ env, dataDir } = await envForDeno('deno-smoke'));
  // Every field non-default, including sub-millisecond timestamps and a numeric, so a driver
  // difference in decoding shows up as a diff rather than hiding behind nulls and zeros.
  const partner = await seedPartner(env.deps, { quota: 40, topup: 25, billing: 'invoice_monthly', perIdPence: 1.25, card: 'pm_smoke' });
  await env.db`update pools set ids_used_this_period = 47, auto_reload_enabled = true, auto_reload_threshold_ids = 5,
                 auto_reload_topup_amount_ids = 50, consecutive_declines = 2,
                 last_declined_at = '2024-03-05T06:07:08.123456Z'
               where account_id = ${partner.account_id}`;
  key = partner.key;
  const direct = await seedDirectAccount(env.deps, 'Deno lookups');
  await grantCredits({ ctx: env.deps, input: { accountId: direct.account_id, credits: 10 } });
  lookupKey = direct.key;
  const agency = await seedPartner(env.deps, { name: 'Deno tracker partner', quota: 10 });
  const child = await createChildVia(env, agency.key, { domain: uniqueDomain('deno-tracker'), monthly_id_quota: 5 });
  tracker = {
    tracking_script_id: child.website.tracking_script_id,
    domain: child.website.domain,
    website_id: child.website.id,
    key: child.child.key,
  };
  // A beacon stored earlier from a company address (collect under Deno only ever sees 127.0.0.1):
  // the Deno sweep identifies it from the edge data snapshot.
  const earlier = {
    n: 0,
    tracking_script_id: tracker.tracking_script_id,
    kind: 'pageview',
    page_host: tracker.domain,
    ip: '17.253.144.10',
    is_bot: false,
    session_id: 'deno-earlier',
    url: `https://${tracker.domain}/pricing`,
    user_agent: 'Mozilla/5.0',
  };
  await env.db`select * from sl_collect_events(${JSON.stringify([earlier])}::text::jsonb)`;
  // The IP data as the Supabase functions ship it (npm run build:edge-data), in a directory of its own.
  ipDataDir = await mkdtemp(join(tmpdir(), 'sightline-deno-ip-data-'));
  await buildEdgeData(ipDataDir);
  node.state = await fromNode(env, { key });
  node.noKey = await fromNode(env, {});
  node.post = await fromNode(env, { method: 'POST' });
  if (dataDir) {
    await env.close();
    env = undefined;
    deno = await startDenoFunctions({ PGLITE_DIR: dataDir }, { IP_DATA_DIR: ipDataDir, SWEEP_SECRET, ...DENO_IP_SETTINGS });
  } else {
    if (!env.url) throw new Error('createTestEnv returned no URL for a Postgres database');
    deno = await startDenoFunctions({ DATABASE_URL: env.url }, { IP_DATA_DIR: ipDataDir, SWEEP_SECRET, ...DENO_IP_SETTINGS });
  }
}, 120_000);

afterAll(async () => {
  // Deno first: it holds connections to the database the Node env is about to drop.
  try {
    await deno?.stop();
  } finally {
    await env?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    if (ipDataDir) await rm(ipDataDir, { recursive: true, force: true });
  }
});

describe(`partner-pool-state under Deno (${usingPostgres ? 'Postgres' : 'embedded PGlite'})`, () => {
  it('the Deno entry script passes deno check', async () => {
    await expect(
      promisify(execFile)(DENO, ['check', '--quiet', '--config', 'deno.json', SERVE_SCRIPT], { cwd: REPO_ROOT, timeout: 60_000 }),
    ).resolves.toBeDefined();
    // The check's own limit decides: a type check on a busy machine can outlast the default 30 s.
  }, 90_000);

  it('serves the same pool state as the Node host for the same partner key', async () => {
    expect(node.state?.status).toBe(200);
    expect(node.state?.body.success).toBe(true);
    const res = await fromDeno(running(), { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(node.state?.body);
  });

  it('rejects a missing key with the same 401 envelope as Node', async () => {
    const res = await fromDeno(running(), {});
    expect(res.status).toBe(401);
    expect(res.body.success).toBe(false);
    expect(typeof res.body.error).toBe('string');
    expect(res).toEqual(node.noKey);
  });

  it('reads request bodies from a web stream: JSON reaches the validator, oversized bodies get 413', async () => {
    const post = (body: string) =>
      fetch(`${running().origin}/partner-create-child-key`, {
        method: 'POST',
        headers: { 'x-access-key': key, 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(10_000),
      });
    const invalid = await post(JSON.stringify({ name: 'Deno body', domain: 'not a domain' }));
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as { error: string }).error).toMatch(/domain/);
    const big = await post(JSON.stringify({ name: 'x'.repeat(70_000), domain: 'big.example' }));
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: string }).error).toMatch(/at most 65536 bytes/);
  });

  it('rejects the wrong method with the same 405 and Allow as Node, before authentication', async () => {
    const res = await fromDeno(running(), { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.allow).toContain('GET');
    expect(res.body.success).toBe(false);
    expect(res).toEqual(node.post);
  });
});

describe('ip-to-company under Deno, from the edge data snapshot', () => {
  const lookup = async (ip: string) => {
    const res = await fetch(`${running().origin}/ip-to-company`, {
      method: 'POST',
      headers: { 'x-access-key': lookupKey, 'content-type': 'application/json' },
      body: JSON.stringify({ ip }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };

  it('identifies a company network and a VPN exit, IPv4 and IPv6, with the country, as the Node host does', async () => {
    const apple = await lookup('17.253.144.10');
    expect(apple.status, JSON.stringify(apple.body)).toBe(200);
    expect(apple.body).toMatchObject({ identified: true, domain: 'apple.com', traffic_type: 'business', country_code: 'US', cached: false });
    expect((await lookup('185.65.134.1')).body).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'Mullvad', country_code: 'NL' });
    const google6 = await lookup('2a00:1450:4001:800::200e');
    expect(google6.body).toMatchObject({ traffic_type: 'hosting', country_code: expect.stringMatching(/^[A-Z]{2}$/) as unknown });
    // The repeat is the stored result, and only the business match was charged.
    expect((await lookup('17.253.144.10')).body).toMatchObject({ cached: true, domain: 'apple.com' });
  });
});

describe('the operator’s own databases under Deno (IP_DATABASES)', () => {
  it('reads the file with Deno’s file system and names the company network’s domain from it, as the Node host does', async () => {
    // 1.7.24.0/24: IMS Health India's own AS; IPinfo Lite's as_domain names it (tests/free-identification on Node).
    const res = await fetch(`${running().origin}/ip-to-company`, {
      method: 'POST',
      headers: { 'x-access-key': lookupKey, 'content-type': 'application/json' },
      body: JSON.stringify({ ip: '1.7.24.1' }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ identified: true, company_name: 'IMS Health India Pvt Ltd', domain: 'imshealth.com' });
  });
});

describe('collect under Deno', () => {
  it('appends the beacon with the address Deno saw, not the one a header claims, and answers 202 with CORS', async () => {
    const res = await fetch(`${running().origin}/collect`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8', 'x-forwarded-for': '8.8.8.8' },
      body: JSON.stringify({
        tracking_script_id: tracker.tracking_script_id,
        type: 'pageview',
        url: `https://${tracker.domain}/`,
        session_id: 'deno',
      }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.status).toBe(202);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await res.json()).toEqual({ success: true });
    // On PGlite the Deno process holds the data directory; on Postgres the row can be read here.
    if (env) {
      const rows = await env.db<{ ip: string }>`select host(ip) as ip from tracker_events where session_id = 'deno'`;
      expect(rows).toEqual([{ ip: '127.0.0.1' }]);
    }
  });
});

describe('the tracker sweep, list-visitors and identification-list under Deno', () => {
  const get = async (path: string, key: string) => {
    const res = await fetch(`${running().origin}${path}`, { headers: { 'x-access-key': key }, signal: AbortSignal.timeout(10_000) });
    return { status: res.status, body: (await res.json()) as Json };
  };

  it('identifies the waiting visitor from the edge data, then lists it for the tracker’s key', async () => {
    const sweep = await fetch(`${running().origin}/sweep-tracker-events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SWEEP_SECRET}` },
      signal: AbortSignal.timeout(20_000),
    });
    expect(sweep.status).toBe(200);
    expect(await sweep.json()).toMatchObject({
      success: true,
      sweep: 'tracker-events',
      result: { visits: expect.any(Object), identifications: expect.any(Object) },
    });
    // The kick collect started may hold the claim for a moment: the listing shows it once settled.
    let visitors: Json[] = [];
    for (let i = 0; i < 50 && !visitors.length; i++) {
      const listed = await get('/list-visitors', tracker.key);
      expect(listed.status).toBe(200);
      visitors = listed.body.visitors as Json[];
      if (!visitors.length) await new Promise((r) => setTimeout(r, 100));
    }
    expect(visitors).toEqual([
      expect.objectContaining({
        ip: '17.253.144.10',
        source: 'tracker',
        domain: 'apple.com',
        country: 'US',
        tracker_site: tracker.domain,
        high_intent: true,
      }),
    ]);
    const ids = await get(`/identification-list?website_id=${tracker.website_id}&status=identified`, tracker.key);
    expect(ids.status).toBe(200);
    expect(ids.body.identifications).toEqual([
      expect.objectContaining({ status: 'identified', identification_type: 'company', company: expect.objectContaining({ domain: 'apple.com' }) }),
    ]);
  });

  it('exports the listed visitor as CSV, read through the driver’s cursor under Deno', async () => {
    const res = await fetch(`${running().origin}/visitors-export?source=tracker`, {
      headers: { 'x-access-key': tracker.key },
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="visitors-all-/);
    const [header, row, ...rest] = (await res.text()).split('\r\n');
    const columns = header?.split(',') ?? [];
    const cells = row?.split(',') ?? [];
    expect(cells[columns.indexOf('ip')]).toBe('17.253.144.10');
    expect(cells[columns.indexOf('tracker_site')]).toBe(tracker.domain);
    expect(rest).toEqual(['']);
  });
});

describe('the tracker script under Deno', () => {
  it('serves the per-site file with its id and a strong ETag, and 304 for a matching If-None-Match', async () => {
    const url = `${running().origin}/t/${tracker.tracking_script_id}.js`;
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/javascript/);
    const body = await res.text();
    expect(body).toContain(tracker.tracking_script_id);
    expect(body).toContain('/functions/v1/collect');
    const etag = res.headers.get('etag') ?? '';
    expect(etag).toMatch(/^"[^"]+"$/);
    const again = await fetch(url, { headers: { 'if-none-match': etag }, signal: AbortSignal.timeout(10_000) });
    expect(again.status).toBe(304);
  });
});
