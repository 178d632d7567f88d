import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { closedPort, startReceiver } from './support/receiver.ts';
import { seedPartner } from './support/seed.ts';

let env: TestEnv;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  env = await createTestEnv();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await env.close();
});

const set = (key: string, body: Json) => call(env, 'partner-set-webhook', { key, body });
async function storedSecret(accountId: string) {
  const [a] = await env.db<{ s: string | null; u: string | null }>`
    select partner_webhook_secret_sealed as s, partner_webhook_url as u from accounts where id = ${accountId}`;
  return { url: a?.u ?? null, secret: a?.s ? await env.deps.keyring.open(a.s) : null };
}

describe('partner-set-webhook', () => {
  it('a first URL mints a secret and returns it once', async () => {
    const p = await seedPartner(env.deps);
    const res = await set(p.key, { url: receiver.url });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      partner_webhook_url: receiver.url,
      partner_webhook_secret: expect.stringMatching(/^whsec_/) as unknown,
      secret_unchanged: false,
    });
    expect((await storedSecret(p.account_id)).secret).toBe(res.body.partner_webhook_secret);
  });

  it('a new URL with the secret omitted keeps the secret and does not return it', async () => {
    const p = await seedPartner(env.deps);
    const first = await set(p.key, { url: receiver.url });
    const res = await set(p.key, { url: `${receiver.url}/v2` });
    expect(res.body).toEqual({ success: true, partner_webhook_url: `${receiver.url}/v2`, secret_unchanged: true });
    expect((await storedSecret(p.account_id)).secret).toBe(first.body.partner_webhook_secret);
  });

  it('an explicit secret is stored and not echoed; explicit null mints a fresh one', async () => {
    const p = await seedPartner(env.deps);
    const res = await set(p.key, { url: receiver.url, secret: 'partner-chosen-secret' });
    expect(res.body).toEqual({ success: true, partner_webhook_url: receiver.url, secret_unchanged: false });
    expect((await storedSecret(p.account_id)).secret).toBe('partner-chosen-secret');
    const remint = await set(p.key, { secret: null });
    expect(remint.body.partner_webhook_secret).toMatch(/^whsec_/);
    expect(remint.body.secret_unchanged).toBe(false);
    expect((await storedSecret(p.account_id)).secret).toBe(remint.body.partner_webhook_secret);
  });

  it('url null disables webhooks and clears URL and secret', async () => {
    const p = await seedPartner(env.deps);
    await set(p.key, { url: receiver.url });
    const res = await set(p.key, { url: null });
    expect(res.body).toEqual({ success: true, partner_webhook_url: null, secret_unchanged: false });
    expect(await storedSecret(p.account_id)).toEqual({ url: null, secret: null });
  });

  it.each([
    ['an empty body', {}, /url, secret, or both/],
    ['a secret shorter than 8', { url: 'https://example.com/h', secret: 'short' }, /secret.*8/],
    ['an invalid URL', { url: 'nope' }, /url is not a valid URL/],
    ['a link-local destination (refused even with ALLOW_PRIVATE_WEBHOOKS)', { url: 'http://169.254.10.1/h' }, /not allowed/],
    ['a secret without any URL configured', { secret: 'long-enough' }, /url is required/],
    ['a secret while clearing', { url: null, secret: 'long-enough' }, /cannot be set while url is being cleared/],
  ])('400 for %s', async (_l, body, message) => {
    const p = await seedPartner(env.deps);
    const res = await set(p.key, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
    expect(await storedSecret(p.account_id)).toEqual({ url: null, secret: null });
  });

  it('400 for an unreachable URL', async () => {
    const p = await seedPartner(env.deps);
    const res = await set(p.key, { url: `http://127.0.0.1:${await closedPort()}/x` });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/not reachable/);
  });
});
