import { createHash } from 'node:crypto';
import { CONNECT_LINK_COMPLETIONS, CONNECT_LINK_TTL_DAYS, createMemoryRateLimiter, randomBase62, type Sql } from '@sightline/core';
import { createHostApp, runOperatorCommand } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, socketPeer, type TestEnv } from './support/app.ts';
import { checkDocumentedResponse, openapiDocument } from './support/openapi-check.ts';
import { seedDirectAccount } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';
import { userHeaders } from './support/users.ts';

/**
 * Connected users (spec rule 2): an account key makes a one-time connect link; whoever holds it
 * completes it (the link's page, or the endpoint the page calls) and becomes a user whose x-user-id
 * acts for the account. Nobody else's x-user-id is accepted, and a refusal comes before any work.
 */
let env: TestEnv;
let account: Awaited<ReturnType<typeof seedDirectAccount>>;
let other: Awaited<ReturnType<typeof seedDirectAccount>>;

/** PUBLIC_BASE_URL of this suite: the address links point to, whatever a request says. */
const PUBLIC_BASE = 'https://api.example.com/functions/v1';

beforeAll(async () => {
  env = await createTestEnv({ publicBaseUrl: PUBLIC_BASE });
  account = await seedDirectAccount(env.deps, 'Connecting account');
  other = await seedDirectAccount(env.deps, 'Other account');
});
afterAll(() => env.close());

let slugs = 0;
const profile = (label = 'jane-doe') => `https://www.linkedin.com/in/${label}-${process.pid}-${++slugs}`;

async function createLink(key = account.key) {
  const res = await call(env, 'api-create-connect-link', { key, method: 'POST' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { link_id: string; token: string; url: string | null; expires_at: string };
}

const complete = (body: Json) => call(env, 'api-complete-connect-link', { body });

/** Every table a connect link touches, beside the ledger tables: proof that a refusal changed nothing. */
async function accountSnapshot(db: Sql) {
  const [row] = await db<{ links: string; users: string; usage: string }>`
    select (select md5(coalesce(string_agg(to_jsonb(l)::text, ',' order by l.id), '')) from connect_links l) as links,
           (select md5(coalesce(string_agg(to_jsonb(u)::text, ',' order by u.id), '')) from connected_users u) as users,
           (select md5(coalesce(string_agg(to_jsonb(d)::text, ',' order by d.account_id, d.operation), '')) from usage_daily d
             where d.operation <> 'api_call') as usage`;
  return { ...(await snapshot(db)), ...row };
}

describe('api-create-connect-link', () => {
  it('makes a one-time link: the token shown once, only its HMAC kept, valid for 7 days, its page at the public address', async () => {
    const before = Date.now();
    const link = await createLink();
    expect(link.token).toMatch(/^slc_[0-9A-Za-z]{43}$/);
    expect(link.url).toBe(`${PUBLIC_BASE}/connect#token=${link.token}`);
    const expires = Date.parse(link.expires_at);
    expect(expires - before).toBeGreaterThan(CONNECT_LINK_TTL_DAYS * 86_400_000 - 60_000);
    expect(expires - before).toBeLessThan(CONNECT_LINK_TTL_DAYS * 86_400_000 + 60_000);
    const [row] = await env.db<{ account_id: string; token_hash: string; used_at: Date | null }>`
      select account_id, token_hash, used_at from connect_links where id = ${link.link_id}`;
    expect(row?.account_id).toBe(account.account_id);
    expect(row?.used_at).toBeNull();
    expect(row?.token_hash).toBe(await env.deps.keyring.hashApiKey(link.token));
    // Neither the token nor a bare (unkeyed) digest of it is stored anywhere in the row.
    const stored = JSON.stringify(row);
    expect(stored).not.toContain(link.token);
    expect(stored).not.toContain(createHash('sha256').update(link.token).digest('hex'));
  });

  it('points the link at PUBLIC_BASE_URL whatever Host and scheme the request arrived with', async () => {
    // A forged Host, and a TLS-terminating proxy's plain-http request with its forwarding headers.
    for (const [url, headers] of [
      ['http://evil.example/functions/v1/api-create-connect-link', { host: 'evil.example' }],
      ['http://10.0.0.5:8787/functions/v1/api-create-connect-link', { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http' }],
    ] as const) {
      const res = await env.app.request(url, { method: 'POST', headers: { 'x-access-key': account.key, ...headers } });
      expect(res.status).toBe(201);
      const link = (await res.json()) as { token: string; url: string };
      expect(link.url).toBe(`${PUBLIC_BASE}/connect#token=${link.token}`);
    }
  });

  it('gives no page URL (null) where no public address is configured, rather than guess one from the request', async () => {
    const { publicBaseUrl: _configured, ...unconfigured } = env.deps;
    const app = createHostApp(unconfigured);
    const res = await app.request('http://evil.example/functions/v1/api-create-connect-link', {
      method: 'POST',
      headers: { 'x-access-key': account.key, host: 'evil.example' },
    });
    expect(res.status).toBe(201);
    const link = (await res.json()) as { token: string; url: string | null };
    expect(link.token).toMatch(/^slc_/);
    expect(link.url).toBeNull();
  });

  it('answers each call with a new link', async () => {
    const [a, b] = [await createLink(), await createLink()];
    expect(a.token).not.toBe(b.token);
    expect(a.link_id).not.toBe(b.link_id);
  });

  it('refuses a 101st open link with a 409; used and expired links do not count', async () => {
    const fresh = await seedDirectAccount(env.deps, 'Many links');
    await env.db`
      insert into connect_links (account_id, token_hash, expires_at)
      select ${fresh.account_id}, md5(g::text) || md5(g::text || 'x'), now() + interval '1 day' from generate_series(1, 100) g`;
    const res = await call(env, 'api-create-connect-link', { key: fresh.key, method: 'POST' });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/100 connect links are open/);
    await env.db`update connect_links set expires_at = now(), created_at = now() - interval '1 day'
                 where id = (select id from connect_links where account_id = ${fresh.account_id} limit 1)`;
    expect((await call(env, 'api-create-connect-link', { key: fresh.key, method: 'POST' })).status).toBe(201);
  });

  it('is made by the operator CLI too: at --page-url, else PUBLIC_BASE_URL, else no page address', async () => {
    const { publicBaseUrl: _, ...unconfigured } = env.deps;
    const bare = (await runOperatorCommand(unconfigured, 'connect-link', { 'account-id': account.account_id })) as { token: string; url: null };
    expect(bare.token).toMatch(/^slc_/);
    expect(bare.url).toBeNull();
    const withPage = (await runOperatorCommand(env.deps, 'connect-link', {
      'account-id': account.account_id,
      'page-url': 'https://api.example.com/functions/v1/connect',
    })) as { token: string; url: string };
    expect(withPage.url).toBe(`https://api.example.com/functions/v1/connect#token=${withPage.token}`);
    await expect(
      runOperatorCommand(env.deps, 'connect-link', { 'account-id': account.account_id, 'page-url': 'javascript:alert(1)' }),
    ).rejects.toThrow(/--page-url must be an http\(s\) URL/);
    await expect(runOperatorCommand(env.deps, 'connect-link', { 'account-id': crypto.randomUUID() })).rejects.toMatchObject({ status: 404 });
    // With PUBLIC_BASE_URL configured, the CLI's link is on it unless --page-url says otherwise.
    const configured = { ...env.deps, publicBaseUrl: 'https://api.example.org/functions/v1' };
    const onBase = (await runOperatorCommand(configured, 'connect-link', { 'account-id': account.account_id })) as { token: string; url: string };
    expect(onBase.url).toBe(`https://api.example.org/functions/v1/connect#token=${onBase.token}`);
  });
});

describe('api-complete-connect-link', () => {
  it('records the user and their profile (canonical), spends the link, and names no account', async () => {
    const link = await createLink();
    const url = profile('Jane-Doe');
    const res = await complete({
      token: link.token,
      name: '  Jane Doe ',
      linkedin_url: `${url.replace('https://www.', 'https://')}/`,
      title: 'VP Sales',
      company: 'Acme',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ success: true, user_id: expect.any(String), name: 'Jane Doe', linkedin_url: url.toLowerCase(), reconnected: false });
    expect(JSON.stringify(res.body)).not.toContain(account.account_id);
    const [user] = await env.db<Json>`
      select account_id, name, linkedin_url, title, company, status from connected_users where id = ${res.body.user_id as string}`;
    expect(user).toEqual({
      account_id: account.account_id,
      name: 'Jane Doe',
      linkedin_url: url.toLowerCase(),
      title: 'VP Sales',
      company: 'Acme',
      status: 'connected',
    });
    const [spent] = await env.db<{ used_at: Date | null; user_id: string }>`select used_at, user_id from connect_links where id = ${link.link_id}`;
    expect(spent?.used_at).toBeInstanceOf(Date);
    expect(spent?.user_id).toBe(res.body.user_id);
  });

  it('counts a connect operation and tells the account webhook (user.connected)', async () => {
    const fresh = await seedDirectAccount(env.deps, 'Counting');
    const link = await createLink(fresh.key);
    const res = await complete({ token: link.token, name: 'Sam', linkedin_url: profile('sam') });
    expect(res.status).toBe(200);
    const [usage] = await env.db<{ calls: number }>`
      select calls::int from usage_daily where account_id = ${fresh.account_id} and operation = 'connect'`;
    expect(usage?.calls).toBe(1);
    const [event] = await env.db<{ event: string; destination: string; body: string }>`
      select event, destination, body from events where partner_account_id = ${fresh.account_id} and event = 'user.connected'`;
    expect(event?.destination).toBe('account');
    expect(JSON.parse(event?.body ?? '{}').data).toMatchObject({ user_id: res.body.user_id, link_id: link.link_id, name: 'Sam', reconnected: false });
  });

  it('refuses a used link with a 410', async () => {
    const link = await createLink();
    expect((await complete({ token: link.token, name: 'First', linkedin_url: profile() })).status).toBe(200);
    const before = await accountSnapshot(env.db);
    const again = await complete({ token: link.token, name: 'Second', linkedin_url: profile() });
    expect(again.status).toBe(410);
    expect(again.body).toEqual({ success: false, error: 'this connect link has already been used', code: 'gone' });
    expect(await accountSnapshot(env.db)).toEqual(before);
  });

  it('refuses an expired link with a 410 naming when it expired', async () => {
    const link = await createLink();
    await env.db`update connect_links set created_at = now() - interval '8 days', expires_at = now() - interval '1 day' where id = ${link.link_id}`;
    const before = await accountSnapshot(env.db);
    const res = await complete({ token: link.token, name: 'Late', linkedin_url: profile() });
    expect(res.status).toBe(410);
    expect(res.body.error).toMatch(/^this connect link expired at \d{4}-\d{2}-\d{2}T/);
    expect(await accountSnapshot(env.db)).toEqual(before);
  });

  it('refuses an unknown token with a 404 and a malformed one with a 400, before any lookup', async () => {
    const unknown = await complete({ token: `slc_${'A'.repeat(43)}`, name: 'Nobody', linkedin_url: profile() });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('no such connect link');
    for (const token of ['', 'slc_short', `sl_${'A'.repeat(44)}`, `slc_${'A'.repeat(42)}!`]) {
      const res = await complete({ token, name: 'Nobody', linkedin_url: profile() });
      expect(res.status, token).toBe(400);
      expect(res.body.error).toMatch(/^token: must be a connect-link token/);
    }
  });

  it.each([
    ['http:', 'http://www.linkedin.com/in/jane-doe', /must use https:/],
    ['a company page', 'https://www.linkedin.com/company/acme', /company pages/],
    ['a sub-path', 'https://www.linkedin.com/in/jane-doe/detail/recent-activity', /sub-paths/],
    ['another host', 'https://uk.linkedin.com/in/jane-doe', /host must be linkedin.com or www.linkedin.com/],
    ['a query string', 'https://www.linkedin.com/in/jane-doe?trk=x', /query string/],
    ['a fragment', 'https://www.linkedin.com/in/jane-doe#about', /fragment/],
    ['not a URL', 'jane-doe', /absolute URL/],
  ])('refuses %s as the user’s profile with a 400 naming the rule, leaving the link usable', async (_what, url, rule) => {
    const link = await createLink();
    const before = await accountSnapshot(env.db);
    const res = await complete({ token: link.token, name: 'Jane', linkedin_url: url });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^linkedin_url: /);
    expect(res.body.error).toMatch(rule);
    expect(await accountSnapshot(env.db)).toEqual(before);
    expect((await complete({ token: link.token, name: 'Jane', linkedin_url: profile() })).status).toBe(200);
  });

  it.each([
    [{ name: '   ' }, /^name: must not be blank/],
    [{ name: 'x'.repeat(201) }, /^name: must be at most 200 characters/],
    [{ name: undefined }, /^name is required/],
    [{ title: 'x'.repeat(301) }, /^title: must be at most 300 characters/],
    [{ company: 42 }, /^company: must be a string/],
    [{ role: 'admin' }, /unknown field/],
  ])('refuses a bad field with a 400: %j', async (patch, message) => {
    const link = await createLink();
    const res = await complete({ token: link.token, name: 'Jane', linkedin_url: profile(), ...patch });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
  });

  it('gives back the same user when the same profile connects again, however it is spelled, and reconnects a disconnected one', async () => {
    const url = profile('repeat');
    const first = await complete({ token: (await createLink()).token, name: 'Rae', linkedin_url: url, title: 'AE' });
    const userId = first.body.user_id as string;
    await runOperatorCommand(env.deps, 'disconnect-user', { 'account-id': account.account_id, 'user-id': userId });
    const again = await complete({
      token: (await createLink()).token,
      name: 'Rae Smith',
      linkedin_url: `${url.toUpperCase().replace('HTTPS://WWW.LINKEDIN.COM/IN/', 'https://LinkedIn.com/in/')}/`,
    });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ user_id: userId, name: 'Rae Smith', reconnected: true });
    const [row] = await env.db<{
      status: string;
      name: string;
      title: string | null;
    }>`select status, name, title from connected_users where id = ${userId}`;
    expect(row).toEqual({ status: 'connected', name: 'Rae Smith', title: null });
    // The same profile on another account is another user.
    const elsewhere = await complete({ token: (await createLink(other.key)).token, name: 'Rae', linkedin_url: url });
    expect(elsewhere.body.user_id).not.toBe(userId);
    expect(elsewhere.body.reconnected).toBe(false);
  });

  it('refuses (409) a profile that is connected now, changing nothing and leaving the link unused', async () => {
    const url = profile('taken');
    const first = await complete({ token: (await createLink()).token, name: 'Owner', linkedin_url: url, title: 'CEO' });
    expect(first.status).toBe(200);
    const link = await createLink();
    const takeover = await complete({ token: link.token, name: 'Impostor', linkedin_url: url, title: 'Intern' });
    expect(takeover.status).toBe(409);
    expect(takeover.body.error).toMatch(/already connected/);
    const [row] = await env.db<{
      name: string;
      title: string | null;
    }>`select name, title from connected_users where id = ${first.body.user_id as string}`;
    expect(row).toEqual({ name: 'Owner', title: 'CEO' });
    // The link was not spent: its holder can connect their own profile with it.
    expect((await complete({ token: link.token, name: 'Someone', linkedin_url: profile('own') })).status).toBe(200);
  });

  it('has no CORS: only the link’s own page, on this origin, calls it', async () => {
    const link = await createLink();
    const res = await call(env, 'api-complete-connect-link', {
      body: { token: link.token, name: 'Jane', linkedin_url: profile() },
      headers: { origin: 'https://evil.example' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect((await call(env, 'api-complete-connect-link', { method: 'OPTIONS', headers: { origin: 'https://evil.example' } })).status).toBe(405);
  });
});

describe('api-complete-connect-link’s rate limit', () => {
  /** The app with the completion limit production builds without Redis, not the suite's generous one. */
  const limitedApp = () => createHostApp({ ...env.deps, connectLinkRateLimiter: createMemoryRateLimiter(CONNECT_LINK_COMPLETIONS) });
  /** A completion from `address`, as the Node server hands the socket's peer to the app; checked against the document. */
  const completeFrom = async (app: ReturnType<typeof createHostApp>, address: string, body: Json) => {
    const url = 'http://localhost/functions/v1/api-complete-connect-link';
    const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
    const res = await app.request(url, init, socketPeer(address));
    await checkDocumentedResponse(url, 'POST', res.clone());
    return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
  };
  const guess = () => ({ token: `slc_${randomBase62(43)}`, name: 'Guesser', linkedin_url: profile('guess') });

  it(`allows ${CONNECT_LINK_COMPLETIONS.limit} completions a minute per client address, then 429 with Retry-After; the refusal changes nothing`, async () => {
    const app = limitedApp();
    const address = '198.51.100.23';
    for (let i = 0; i < CONNECT_LINK_COMPLETIONS.limit; i++) {
      const res = await completeFrom(app, address, guess());
      expect(res.status).toBe(404);
      expect(res.headers.get('ratelimit-policy')).toBe(
        `"connect-link";q=${CONNECT_LINK_COMPLETIONS.limit};w=${CONNECT_LINK_COMPLETIONS.windowSeconds}`,
      );
    }
    // A real link, from the same address: refused before its token is looked up, and left unused.
    const link = await createLink();
    const before = await accountSnapshot(env.db);
    const refused = await completeFrom(app, address, { token: link.token, name: 'Jane', linkedin_url: profile() });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      success: false,
      error: expect.stringMatching(/^too many connect-link completions from this address/),
      code: 'rate_limited',
    });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(CONNECT_LINK_COMPLETIONS.windowSeconds);
    expect(refused.headers.get('ratelimit')).toMatch(/^"connect-link";r=0;t=\d+$/);
    expect(await accountSnapshot(env.db)).toEqual(before);
    // Another address is counted apart: the same link completes from there.
    const elsewhere = await completeFrom(app, '198.51.100.24', { token: link.token, name: 'Jane', linkedin_url: profile() });
    expect(elsewhere.status).toBe(200);
  });

  it('counts an IPv6 client by its /64, so stepping through the addresses of one network does not escape it', async () => {
    const app = limitedApp();
    for (let i = 0; i < CONNECT_LINK_COMPLETIONS.limit; i++) {
      expect((await completeFrom(app, `2001:db8:7:1::${(i + 1).toString(16)}`, guess())).status).toBe(404);
    }
    expect((await completeFrom(app, '2001:db8:7:1:ffff:ffff:ffff:fffe', guess())).status).toBe(429);
    expect((await completeFrom(app, '2001:db8:7:2::1', guess())).status).toBe(404);
  });

  it('is documented: 429 with Retry-After on the route', () => {
    const op = openapiDocument.paths['/functions/v1/api-complete-connect-link']?.post as unknown as {
      responses: Record<string, { headers?: Record<string, unknown> }>;
    };
    expect(Object.keys(op.responses)).toContain('429');
    expect(Object.keys(op.responses['429']?.headers ?? {})).toEqual(expect.arrayContaining(['Retry-After', 'RateLimit', 'RateLimit-Policy']));
  });
});

describe('the connect page', () => {
  it('is self-contained HTML under a strict CSP naming the digests of its own script and style', async () => {
    const res = await env.app.request('http://localhost/functions/v1/connect');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/^default-src 'none'; /);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)?.[1] ?? '';
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1] ?? '';
    const digest = (text: string) => createHash('sha256').update(text).digest('base64');
    expect(csp).toContain(`script-src 'sha256-${digest(script)}'`);
    expect(csp).toContain(`style-src 'sha256-${digest(style)}'`);
    // No external asset of any kind, and the form posts to its sibling endpoint.
    expect(html).not.toMatch(/\b(src|href)=/);
    expect(script).toContain("fetch('api-complete-connect-link'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  });
});

describe('x-user-id after connecting', () => {
  it('is accepted by a connected-user endpoint; an unknown, foreign or disconnected user is refused 403 before any work', async () => {
    const link = await createLink();
    const user = (await complete({ token: link.token, name: 'Acting', linkedin_url: profile('acting') })).body.user_id as string;
    const ok = await call(env, 'api-account-status', { key: account.key, method: 'POST', headers: userHeaders(user) });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);

    const foreign = (await complete({ token: (await createLink(other.key)).token, name: 'Foreign', linkedin_url: profile('foreign') })).body
      .user_id as string;
    const disconnected = (await complete({ token: (await createLink()).token, name: 'Gone', linkedin_url: profile('gone') })).body.user_id as string;
    await runOperatorCommand(env.deps, 'disconnect-user', { 'account-id': account.account_id, 'user-id': disconnected });
    for (const refused of [crypto.randomUUID(), foreign, disconnected]) {
      await env.deps.usage.flush();
      const before = await accountSnapshot(env.db);
      const [calls] = await env.db<{ n: number }>`select coalesce(sum(calls), 0)::int as n from usage_daily where account_id = ${account.account_id}`;
      const res = await call(env, 'api-update-settings', {
        key: account.key,
        body: { allowed_domains: ['refused.example.com'] },
        headers: userHeaders(refused),
      });
      expect(res.status).toBe(403);
      expect(res.body.error).toMatch(/not a user connected to this account/);
      await env.deps.usage.flush();
      expect(await accountSnapshot(env.db)).toEqual(before);
      // Not even counted as a call of the account.
      const [after] = await env.db<{ n: number }>`select coalesce(sum(calls), 0)::int as n from usage_daily where account_id = ${account.account_id}`;
      expect(after?.n).toBe(calls?.n);
    }
  });
});

describe('connect-user (operator)', () => {
  it('makes and completes a link in one go, with a fresh test profile by default', async () => {
    const a = (await runOperatorCommand(env.deps, 'connect-user', { 'account-id': account.account_id })) as Json;
    const b = (await runOperatorCommand(env.deps, 'connect-user', { 'account-id': account.account_id })) as Json;
    expect(a).toMatchObject({
      account_id: account.account_id,
      name: 'Test User',
      reconnected: false,
      user_id: expect.any(String),
      link_id: expect.any(String),
    });
    expect(a.linkedin_url).toMatch(/^https:\/\/www\.linkedin\.com\/in\/test-user-[a-z0-9]{12}$/);
    expect(b.user_id).not.toBe(a.user_id);
    const res = await call(env, 'api-account-status', { key: account.key, method: 'POST', headers: userHeaders(a.user_id as string) });
    expect(res.status).toBe(200);
  });

  it('takes the user’s details and checks them like the page does, leaving no link behind on a refusal', async () => {
    const url = profile('named');
    const named = (await runOperatorCommand(env.deps, 'connect-user', {
      'account-id': account.account_id,
      name: 'Nia Named',
      'linkedin-url': url,
      title: 'CRO',
      company: 'Named Ltd',
    })) as Json;
    expect(named).toMatchObject({ name: 'Nia Named', linkedin_url: url });
    const [links] = await env.db<{ n: number }>`select count(*)::int as n from connect_links`;
    await expect(
      runOperatorCommand(env.deps, 'connect-user', { 'account-id': account.account_id, 'linkedin-url': 'https://www.linkedin.com/company/acme' }),
    ).rejects.toThrow(/^--linkedin-url company pages/);
    const [after] = await env.db<{ n: number }>`select count(*)::int as n from connect_links`;
    expect(after?.n).toBe(links?.n);
  });

  it('disconnect-user answers 404 for a user of another account', async () => {
    const a = (await runOperatorCommand(env.deps, 'connect-user', { 'account-id': account.account_id })) as Json;
    await expect(
      runOperatorCommand(env.deps, 'disconnect-user', { 'account-id': other.account_id, 'user-id': a.user_id as string }),
    ).rejects.toMatchObject({
      status: 404,
    });
  });
});
