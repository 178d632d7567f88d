import { connectUser, grantCredits, type Sql, startAfterWork } from '@sightline/core';
import { runOperatorCommand } from '@sightline/host';
import { verifyWebhook } from '@sightline/webhook-verify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, fn, type Json, socketPeer, type TestEnv } from './support/app.ts';
import { countingProcessor } from './support/payments.ts';
import { closedPort, startReceiver } from './support/receiver.ts';
import { seedDirectAccount } from './support/seed.ts';
import { snapshot } from './support/snapshot.ts';
import { userHeaders } from './support/users.ts';

/**
 * The account endpoints of a connected user: status (balance, seats, trial), the usage summary over
 * calendar periods in UTC, and settings — each setting validated, and each shown to take effect
 * (auto-reload through the payment port, the page hosts trackers accept, the signed account webhook).
 */
const payments = countingProcessor();
let env: TestEnv;
/** The same app with ALLOW_PRIVATE_WEBHOOKS off, as in production: https only, no private destinations. */
let strict: TestEnv;

beforeAll(async () => {
  env = await createTestEnv({ payments: payments.processor });
  strict = await createTestEnv({ allowPrivateWebhooks: false });
});
afterAll(async () => {
  await env.close();
  await strict.close();
});
afterEach(() => payments.reset());

/** A direct account with a connected user: what every suite here acts as. */
async function connectedAccount(target: TestEnv = env, name = 'Account') {
  const account = await seedDirectAccount(target.deps, name);
  const user = await connectUser({ ctx: target.deps, input: { accountId: account.account_id } });
  const as = (endpoint: string, body?: unknown, userId = user.user_id) =>
    call(target, endpoint, { key: account.key, method: 'POST', body, headers: userHeaders(userId) });
  return { ...account, userId: user.user_id, as };
}

const settingsOf = async (db: Sql, accountId: string) =>
  (
    await db<{
      webhook_url: string | null;
      webhook_secret_sealed: string | null;
      auto_reload_enabled: boolean;
      auto_reload_threshold: number;
      allowed_domains: string[];
    }>`select webhook_url, webhook_secret_sealed, auto_reload_enabled, auto_reload_threshold, allowed_domains from accounts where id = ${accountId}`
  )[0];

describe('api-account-status', () => {
  it('reports the balance, the connected users as seats, and no trial', async () => {
    const a = await connectedAccount();
    await grantCredits({ ctx: env.deps, input: { accountId: a.account_id, credits: 250 } });
    const second = await connectUser({ ctx: env.deps, input: { accountId: a.account_id } });
    const gone = await connectUser({ ctx: env.deps, input: { accountId: a.account_id } });
    await runOperatorCommand(env.deps, 'disconnect-user', { 'account-id': a.account_id, 'user-id': gone.user_id });
    const res = await a.as('api-account-status');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      balance: 250,
      seats_used: 2,
      is_trial: false,
      trial_ends_at: null,
      auto_reload: { enabled: false, threshold: 0, can_fire: false, cannot_fire_because: 'auto-reload is off' },
    });
    // Any connected user of the account sees the same; a body, if sent, is ignored.
    expect((await a.as('api-account-status', {}, second.user_id)).body).toEqual(res.body);
  });

  it('shows a trial the operator started, and its end once it is over', async () => {
    const a = await connectedAccount();
    const started = (await runOperatorCommand(env.deps, 'set-trial', { 'account-id': a.account_id, days: '14' })) as Json;
    expect(started).toMatchObject({ account_id: a.account_id, is_trial: true });
    const res = await a.as('api-account-status');
    expect(res.body).toMatchObject({ is_trial: true, trial_ends_at: started.trial_ends_at });
    const ends = Date.parse(res.body.trial_ends_at as string);
    expect(Math.abs(ends - (Date.now() + 14 * 86_400_000))).toBeLessThan(60_000);
    await runOperatorCommand(env.deps, 'set-trial', { 'account-id': a.account_id, days: '0' });
    const over = await a.as('api-account-status');
    expect(over.body.is_trial).toBe(false);
    expect(Date.parse(over.body.trial_ends_at as string)).toBeLessThanOrEqual(Date.now() + 1000);
    await expect(runOperatorCommand(env.deps, 'set-trial', { 'account-id': a.account_id, days: '-1' })).rejects.toMatchObject({ status: 400 });
    await expect(runOperatorCommand(env.deps, 'set-trial', { 'account-id': crypto.randomUUID(), days: '3' })).rejects.toMatchObject({ status: 404 });
  });
});

describe('auto-reload enabled before the operator sets up a card', () => {
  it('is accepted, says in the account status why it cannot fire, never claims a reload, and can fire once set up', async () => {
    const a = await connectedAccount();
    await grantCredits({ ctx: env.deps, input: { accountId: a.account_id, credits: 5 } });
    const set = await a.as('api-update-settings', { auto_reload_enabled: true, auto_reload_threshold: 10 });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({ success: true, updated_fields: ['auto_reload_enabled', 'auto_reload_threshold'] });
    const status = await a.as('api-account-status');
    expect(status.body.auto_reload).toEqual({
      enabled: true,
      threshold: 10,
      can_fire: false,
      cannot_fire_because: expect.stringMatching(/^no payment method and reload amount are set up yet/),
    });
    // Below the threshold with no card: no reload was claimed.
    const [row] = await env.db<{ started: Date | null }>`select credit_reload_started_at as started from accounts where id = ${a.account_id}`;
    expect(row?.started).toBeNull();
    await runOperatorCommand(env.deps, 'set-credit-reload', { 'account-id': a.account_id, amount: '100', 'price-pence': '2', card: 'pm_card' });
    expect((await a.as('api-account-status')).body.auto_reload).toEqual({ enabled: true, threshold: 10, can_fire: true, cannot_fire_because: null });
  });
});

describe('api-usage-summary', () => {
  const DAY = 86_400_000;
  /** The period starts, computed here independently of the server: UTC today, ISO week (Monday), month. */
  function periodStarts(now = new Date()) {
    const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
    const week = today - ((now.getUTCDay() + 6) % 7) * DAY;
    const month = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    return { day: today, week, month, all: null } as const;
  }
  const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

  it('counts usage days and debits exactly from the start of each calendar period (UTC), and calls so far', async () => {
    const a = await connectedAccount(env, 'Usage');
    const starts = periodStarts();
    // Days on and just before each boundary, and long ago; each row's count a distinct power of two.
    const days = [starts.day, starts.week, starts.week - DAY, starts.month, starts.month - DAY, starts.day - 400 * DAY];
    const research = days.map((day, i) => ({ day, calls: 2 ** i }));
    for (const r of research) {
      await env.db`
        insert into usage_daily (account_id, day, operation, calls) values (${a.account_id}, ${isoDay(r.day)}::date, 'research', ${r.calls})
        on conflict (account_id, day, operation) do update set calls = usage_daily.calls + excluded.calls`;
    }
    await env.db`insert into usage_daily (account_id, day, operation, calls) values
      (${a.account_id}, ${isoDay(starts.day)}::date, 'ip-to-company', 3),
      (${a.account_id}, ${isoDay(starts.day - 400 * DAY)}::date, 'api_call', 1000)`;
    // Debits at each boundary and a millisecond before it: the boundary belongs to the period.
    const debits = [starts.day, starts.day - 1, starts.week, starts.week - 1, starts.month, starts.month - 1, starts.day - 400 * DAY].map(
      (at, i) => ({
        at,
        amount: 2 ** i,
      }),
    );
    for (const d of debits) {
      await env.db`insert into credit_transactions (account_id, type, amount, operation, created_at)
                   values (${a.account_id}, 'debit', ${d.amount}, 'message', ${new Date(d.at)})`;
    }
    // Paid for but never counted as usage: shown by its number of debits (as the message debits above).
    await env.db`insert into credit_transactions (account_id, type, amount, operation, created_at)
                 values (${a.account_id}, 'debit', 7, 'legacy-op', ${new Date(starts.day)}), (${a.account_id}, 'debit', 7, 'legacy-op', ${new Date(starts.day)})`;
    await env.db`insert into credit_transactions (account_id, type, amount, operation, created_at)
                 values (${a.account_id}, 'grant', 500, 'grant', ${new Date(starts.day)})`;

    let calls = 0;
    for (const period of ['day', 'week', 'month', 'all'] as const) {
      const since = starts[period];
      const inPeriod = (at: number) => since === null || at >= since;
      const res = await a.as('api-usage-summary', { period });
      calls++;
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const body = res.body as { transactions: Json[] } & Json;
      expect(body.period).toBe(period);
      expect(body.since).toBe(since === null ? null : new Date(since).toISOString());
      const debited = debits.filter((d) => inPeriod(d.at));
      expect(body.credits_used, period).toBe(debited.reduce((s, d) => s + d.amount, 0) + 14);
      // Every call of the account's key so far is today's (this one included), plus the old ones for `all`.
      expect(body.api_calls, period).toBe(calls + (period === 'all' ? 1000 : 0));
      expect(body.by_operation, period).toEqual({
        research: research.filter((r) => inPeriod(r.day)).reduce((s, r) => s + r.calls, 0),
        // Debited, never counted as usage here: shown by its number of debits.
        message: debited.length,
        connect: 1,
        'ip-to-company': 3,
        'legacy-op': 2,
      });
      // Grants are listed too (type says which way); ties on a timestamp come in no set order.
      const amounts = (list: number[]) => [...list].sort((x, y) => x - y);
      expect(amounts(body.transactions.map((t) => t.amount as number))).toEqual(amounts([...debited.map((d) => d.amount), 7, 7, 500]));
      const stamps = body.transactions.map((t) => Date.parse(t.created_at as string));
      expect(stamps).toEqual([...stamps].sort((x, y) => y - x));
      expect(body.transactions.length).toBe(debited.length + 3);
      for (const t of body.transactions) expect(Object.keys(t).sort()).toEqual(['amount', 'created_at', 'id', 'operation', 'type']);
    }
  });

  it('lists at most the 100 newest transactions, while the totals count them all', async () => {
    const a = await connectedAccount(env, 'Busy');
    await env.db`insert into credit_transactions (account_id, type, amount, operation, created_at)
                 select ${a.account_id}, 'debit', 1, 'research', now() - g * interval '1 second' from generate_series(1, 130) g`;
    const res = await a.as('api-usage-summary', { period: 'all' });
    const body = res.body as { transactions: { created_at: string }[]; credits_used: number };
    expect(body.credits_used).toBe(130);
    expect(body.transactions).toHaveLength(100);
    const newest = Date.parse(body.transactions[0]?.created_at ?? '');
    expect(Date.now() - newest).toBeLessThan(5_000);
  });

  it('counts the caller’s own calls made a moment ago (the usage meter is flushed first)', async () => {
    const a = await connectedAccount(env, 'Fresh');
    await a.as('api-account-status');
    await a.as('api-account-status');
    const res = await a.as('api-usage-summary', { period: 'day' });
    expect(res.body.api_calls).toBe(3);
  });

  it.each([
    [{ period: 'year' }, 'period: must be one of day, week, month, all'],
    [{ period: 'DAY' }, 'period: must be one of day, week, month, all'],
    [{ period: 7 }, 'period: must be one of day, week, month, all'],
    [{}, 'period is required'],
    [{ period: 'day', limit: 5 }, 'unknown field'],
  ])('refuses %j with a 400', async (body, message) => {
    const a = await connectedAccount(env, 'Bad period');
    const res = await a.as('api-usage-summary', body);
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(message);
  });
});

describe('api-update-settings: validation', () => {
  let a: Awaited<ReturnType<typeof connectedAccount>>;
  let s: Awaited<ReturnType<typeof connectedAccount>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    a = await connectedAccount(env, 'Settings');
    s = await connectedAccount(strict, 'Strict settings');
    receiver = await startReceiver();
  });
  afterAll(() => receiver.close());

  it('changes only the fields given and lists them in a fixed order', async () => {
    const res = await a.as('api-update-settings', { allowed_domains: ['Shop.Example.com'], auto_reload_threshold: 25 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ success: true, updated_fields: ['auto_reload_threshold', 'allowed_domains'] });
    const after = await settingsOf(env.db, a.account_id);
    expect(after).toMatchObject({ auto_reload_threshold: 25, allowed_domains: ['shop.example.com'], auto_reload_enabled: false, webhook_url: null });
    const again = await a.as('api-update-settings', { auto_reload_threshold: 0 });
    expect(again.body.updated_fields).toEqual(['auto_reload_threshold']);
    expect(await settingsOf(env.db, a.account_id)).toMatchObject({ auto_reload_threshold: 0, allowed_domains: ['shop.example.com'] });
  });

  it('sets the quiet period after which a visitor’s next visit is a return (visitor_returned), 1 to 365 days', async () => {
    const res = await a.as('api-update-settings', { return_quiet_days: 30 });
    expect(res.body).toEqual({ success: true, updated_fields: ['return_quiet_days'] });
    const [row] = await env.db<{ days: number }>`select return_quiet_days as days from accounts where id = ${a.account_id}`;
    expect(row?.days).toBe(30);
    for (const bad of [0, 366, 2.5, '7']) {
      const refused = await a.as('api-update-settings', { return_quiet_days: bad });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatch(/return_quiet_days/);
    }
  });

  it('refuses a URL that is within 2048 characters as sent but longer once percent-encoded (400, nothing stored)', async () => {
    const before = await settingsOf(env.db, a.account_id);
    const res = await a.as('api-update-settings', { webhook_url: `${receiver.url}/${'é'.repeat(1000)}`, webhook_secret: 'long-enough' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^webhook_url must be at most 2048 characters once percent-encoded/);
    expect(await settingsOf(env.db, a.account_id)).toEqual(before);
  });

  it('stores the webhook secret sealed, never in plain text; null removes URL and secret', async () => {
    const res = await a.as('api-update-settings', { webhook_url: receiver.url, webhook_secret: 'account-secret-1' });
    expect(res.body).toEqual({ success: true, updated_fields: ['webhook_url', 'webhook_secret'] });
    const stored = await settingsOf(env.db, a.account_id);
    expect(stored?.webhook_url).toBe(receiver.url);
    expect(stored?.webhook_secret_sealed).not.toContain('account-secret-1');
    expect(await env.deps.keyring.open(stored?.webhook_secret_sealed ?? '')).toBe('account-secret-1');
    // A new URL keeps the stored secret; a secret alone replaces it.
    expect((await a.as('api-update-settings', { webhook_url: `${receiver.url}/v2` })).status).toBe(200);
    expect((await a.as('api-update-settings', { webhook_secret: 'account-secret-2' })).status).toBe(200);
    const rotated = await settingsOf(env.db, a.account_id);
    expect(rotated?.webhook_url).toBe(`${receiver.url}/v2`);
    expect(await env.deps.keyring.open(rotated?.webhook_secret_sealed ?? '')).toBe('account-secret-2');
    const cleared = await a.as('api-update-settings', { webhook_url: null });
    expect(cleared.body).toEqual({ success: true, updated_fields: ['webhook_url'] });
    expect(await settingsOf(env.db, a.account_id)).toMatchObject({ webhook_url: null, webhook_secret_sealed: null });
  });

  it('normalises allowed_domains (lower case, trailing dot, duplicates) and [] restores the default', async () => {
    const res = await a.as('api-update-settings', { allowed_domains: ['WWW.Example.com', 'www.example.com.', ' shop.example.com '] });
    expect(res.status).toBe(200);
    expect((await settingsOf(env.db, a.account_id))?.allowed_domains).toEqual(['www.example.com', 'shop.example.com']);
    await a.as('api-update-settings', { allowed_domains: [] });
    expect((await settingsOf(env.db, a.account_id))?.allowed_domains).toEqual([]);
  });

  const refusals: [string, () => TestEnv, () => typeof a, Json, number, RegExp][] = [
    ['an empty body', () => env, () => a, {}, 400, /^nothing to update: give at least one of webhook_url, webhook_secret/],
    ['an unknown field', () => env, () => a, { auto_reload_amount: 100 }, 400, /unknown field/],
    [
      'a URL that is not http(s)',
      () => env,
      () => a,
      { webhook_url: 'ftp://example.com/hook', webhook_secret: 'long-enough' },
      400,
      /^webhook_url must be an https:\/\/ URL/,
    ],
    [
      'plain http in production',
      () => strict,
      () => s,
      { webhook_url: 'http://example.com/hook', webhook_secret: 'long-enough' },
      400,
      /^webhook_url must be an https:\/\/ URL/,
    ],
    [
      'a loopback destination',
      () => strict,
      () => s,
      { webhook_url: 'https://127.0.0.1/hook', webhook_secret: 'long-enough' },
      400,
      /^webhook_url is not allowed: 127\.0\.0\.1 is a loopback/,
    ],
    [
      'a private destination',
      () => strict,
      () => s,
      { webhook_url: 'https://10.1.2.3/hook', webhook_secret: 'long-enough' },
      400,
      /^webhook_url is not allowed: 10\.1\.2\.3 is a private/,
    ],
    [
      'a metadata service',
      () => strict,
      () => s,
      { webhook_url: 'https://169.254.169.254/latest', webhook_secret: 'long-enough' },
      400,
      /^webhook_url is not allowed/,
    ],
    [
      'a metadata host name',
      () => strict,
      () => s,
      { webhook_url: 'https://metadata.google.internal/x', webhook_secret: 'long-enough' },
      400,
      /metadata service/,
    ],
    [
      'an octal loopback spelling',
      () => strict,
      () => s,
      { webhook_url: 'https://0177.0.0.1/hook', webhook_secret: 'long-enough' },
      400,
      /^webhook_url is not allowed/,
    ],
    [
      'a URL longer than 2048',
      () => env,
      () => a,
      { webhook_url: `https://example.com/${'x'.repeat(2048)}`, webhook_secret: 'long-enough' },
      400,
      /^webhook_url: must be at most 2048/,
    ],
    [
      'a URL with no secret stored or given',
      () => env,
      () => a,
      { webhook_url: 'https://example.com/hook' },
      400,
      /^webhook_url needs a webhook_secret/,
    ],
    ['a short secret', () => env, () => a, { webhook_secret: 'short' }, 400, /^webhook_secret: must be at least 8 characters/],
    ['a secret longer than 256', () => env, () => a, { webhook_secret: 'x'.repeat(257) }, 400, /^webhook_secret: /],
    ['a secret without a URL', () => env, () => a, { webhook_secret: 'long-enough' }, 400, /^webhook_secret needs a webhook_url/],
    [
      'a secret while removing the URL',
      () => env,
      () => a,
      { webhook_url: null, webhook_secret: 'long-enough' },
      400,
      /webhook_secret cannot be set while webhook_url is being removed/,
    ],
    ['a non-boolean auto_reload_enabled', () => env, () => a, { auto_reload_enabled: 'yes' }, 400, /^auto_reload_enabled: must be true or false/],
    ['a negative threshold', () => env, () => a, { auto_reload_threshold: -1 }, 400, /^auto_reload_threshold: must be 0 or more/],
    ['a fractional threshold', () => env, () => a, { auto_reload_threshold: 1.5 }, 400, /^auto_reload_threshold: must be a whole number/],
    [
      'six allowed domains',
      () => env,
      () => a,
      { allowed_domains: ['a.com', 'b.com', 'c.com', 'd.com', 'e.com', 'f.com'] },
      400,
      /^allowed_domains: must have at most 5 entries/,
    ],
    [
      'a URL as a domain',
      () => env,
      () => a,
      { allowed_domains: ['ok.com', 'https://shop.example.com'] },
      400,
      /^allowed_domains\[1\] \("https:\/\/shop\.example\.com"\) must be a bare host/,
    ],
    [
      'a port',
      () => env,
      () => a,
      { allowed_domains: ['shop.example.com:8080'] },
      400,
      /^allowed_domains\[0\] \("shop\.example\.com:8080"\) must be a bare host like example\.com, without port/,
    ],
    ['a path', () => env, () => a, { allowed_domains: ['example.com/shop'] }, 400, /^allowed_domains\[0\] .* without port, path or query/],
    ['a wildcard', () => env, () => a, { allowed_domains: ['*.example.com'] }, 400, /^allowed_domains\[0\] \("\*\.example\.com"\)/],
    ['a single label', () => env, () => a, { allowed_domains: ['localhost'] }, 400, /^allowed_domains\[0\] \("localhost"\) must be a bare host/],
    ['a non-string entry', () => env, () => a, { allowed_domains: [42] }, 400, /^allowed_domains\.0: must be strings/],
    [
      'a public suffix',
      () => env,
      () => a,
      { allowed_domains: ['example.com', 'co.uk'] },
      400,
      /^allowed_domains\[1\] \("co\.uk"\) is a public suffix/,
    ],
    ['a private public suffix', () => env, () => a, { allowed_domains: ['GitHub.io.'] }, 400, /^allowed_domains\[0\] .* is a public suffix/],
  ];

  it.each(refusals)('refuses %s, changing nothing', async (_what, target, who, body, status, message) => {
    const before = await snapshot(target().db);
    const res = await who().as('api-update-settings', body);
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body.success).toBe(false);
    expect(res.body.error).toMatch(message);
    expect(await snapshot(target().db)).toEqual(before);
  });

  it('refuses an unreachable URL after probing it, changing nothing', async () => {
    const before = await snapshot(env.db);
    const res = await a.as('api-update-settings', { webhook_url: `http://127.0.0.1:${await closedPort()}/hook`, webhook_secret: 'long-enough' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^webhook_url is not reachable/);
    expect(await snapshot(env.db)).toEqual(before);
  });

  it('accepts an https URL on a public host in production (probed, not posted to)', async () => {
    // The probe is a HEAD through the injected transport: a fake one, as nothing public is reachable from tests.
    const probed: string[] = [];
    const app = (await import('@sightline/host')).createHostApp({
      ...strict.deps,
      webhooks: {
        async request(url, init) {
          probed.push(`${init.method} ${url}`);
          return { status: 405 };
        },
      },
    });
    const res = await app.request(fn('api-update-settings'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': s.key, ...userHeaders(s.userId) },
      body: JSON.stringify({ webhook_url: 'https://hooks.example.com/sightline', webhook_secret: 'long-enough' }),
    });
    expect(res.status).toBe(200);
    expect(probed).toEqual(['HEAD https://hooks.example.com/sightline']);
  });
});

describe('api-update-settings: allowed_domains restrict the page hosts the account’s trackers accept', () => {
  it('replaces the website’s own domain when set; subdomains of a listed host count; [] restores the default', async () => {
    const a = await connectedAccount(env, 'Tracked');
    const [site] = await env.db<{ domain: string }>`select domain from websites where id = ${a.website_id}`;
    const own = site?.domain ?? '';
    let n = 0;
    const beacon = async (url: string) => {
      const res = await env.app.request(
        fn('collect'),
        {
          method: 'POST',
          headers: { 'content-type': 'text/plain', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0' },
          body: JSON.stringify({ tracking_script_id: a.tracking_script_id, type: 'pageview', url, session_id: `s-${++n}` }),
        },
        socketPeer('203.0.113.9'),
      );
      // Refused or not, collect answers the same: the browser learns nothing.
      expect(res.status).toBe(202);
      const [row] = await env.db<{ n: number }>`select count(*)::int as n from tracker_events where website_id = ${a.website_id} and url = ${url}`;
      return row?.n === 1;
    };
    expect(await beacon(`https://${own}/a`)).toBe(true);
    expect(await beacon('https://www.allowed-shop.example/a')).toBe(false);

    expect((await a.as('api-update-settings', { allowed_domains: ['www.allowed-shop.example', 'blog.allowed.example'] })).status).toBe(200);
    expect(await beacon('https://www.allowed-shop.example/b')).toBe(true);
    expect(await beacon('https://checkout.www.allowed-shop.example/b')).toBe(true);
    expect(await beacon('https://blog.allowed.example/b')).toBe(true);
    expect(await beacon('https://allowed-shop.example/b')).toBe(false);
    expect(await beacon('https://allowed.example/b')).toBe(false);
    expect(await beacon('https://evilwww.allowed-shop.example/b')).toBe(false);
    expect(await beacon(`https://${own}/b`)).toBe(false);

    expect((await a.as('api-update-settings', { allowed_domains: [] })).status).toBe(200);
    expect(await beacon(`https://${own}/c`)).toBe(true);
    expect(await beacon('https://www.allowed-shop.example/c')).toBe(false);
  });
});

describe('api-update-settings: the account webhook receives signed events', () => {
  it('delivers user.connected, credits.low and credits.reloaded signed with the account’s secret; removing the URL stops deliveries', async () => {
    const receiver = await startReceiver();
    try {
      const a = await connectedAccount(env, 'Hooked');
      await grantCredits({ ctx: env.deps, input: { accountId: a.account_id, credits: 100 } });
      await runOperatorCommand(env.deps, 'set-credit-reload', {
        'account-id': a.account_id,
        amount: '200',
        'price-pence': '1.5',
        card: 'pm_card_visa',
      });
      const set = await a.as('api-update-settings', {
        webhook_url: receiver.url,
        webhook_secret: 'account-hook-secret',
        auto_reload_enabled: true,
        auto_reload_threshold: 50,
      });
      expect(set.body).toEqual({ success: true, updated_fields: ['webhook_url', 'webhook_secret', 'auto_reload_enabled', 'auto_reload_threshold'] });
      const link = await call(env, 'api-create-connect-link', { key: a.key, method: 'POST' });
      await call(env, 'api-complete-connect-link', {
        body: { token: link.body.token, name: 'Hook User', linkedin_url: `https://www.linkedin.com/in/hook-user-${process.pid}` },
      });
      await env.settle();

      // A debit takes the balance below the threshold: credits.low, then the reload and credits.reloaded.
      const [debit] = await env.db<{ reload: boolean }>`select sl_debit_credits(${a.account_id}, 'message', 60, ${a.userId}, null) as reload`;
      expect(debit?.reload).toBe(true);
      startAfterWork(env.deps, 'credit-reload', { accountId: a.account_id });
      await env.settle();

      const got = receiver.received.filter((r) => r.method === 'POST');
      expect(got.map((r) => r.headers['x-service-event']).sort()).toEqual(['credits.low', 'credits.reloaded', 'user.connected']);
      const events = await Promise.all(got.map((r) => verifyWebhook<Json>(r.body, r.headers, 'account-hook-secret')));
      const data = (name: string) => events.find((e) => e.event === name)?.data;
      expect(data('user.connected')).toMatchObject({ name: 'Hook User', reconnected: false });
      expect(data('credits.low')).toEqual({ balance: 40, threshold: 50, auto_reload_enabled: true });
      expect(data('credits.reloaded')).toMatchObject({ amount: 200, balance: 240 });
      await expect(verifyWebhook(got[0]?.body ?? '', got[0]?.headers ?? {}, 'some-other-secret')).rejects.toThrow();
      expect(payments.charges).toHaveLength(1);
      expect(payments.charges[0]).toMatchObject({ amountPence: 300, paymentMethodId: 'pm_card_visa' });

      // Without a URL, events are not delivered (and not kept for later).
      expect((await a.as('api-update-settings', { webhook_url: null })).status).toBe(200);
      await env.db`select sl_debit_credits(${a.account_id}, 'message', 200, ${a.userId}, null)`;
      await env.settle();
      const [low] = await env.db<{ delivery_status: string }>`
        select delivery_status from events where partner_account_id = ${a.account_id} and event = 'credits.low' order by seq desc limit 1`;
      expect(low?.delivery_status).toBe('no_destination');
      expect(receiver.received.filter((r) => r.method === 'POST')).toHaveLength(3);
    } finally {
      await receiver.close();
    }
  });
});
