import { scoreIdentifications, sweepWebhookDeliveries, workTrackerQueue } from '@sightline/core';
import { HttpResponse, http } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { seedUsCompaniesIcp } from './support/icps.ts';
import { realIpDeps, tableProvider } from './support/ip.ts';
import { startReceiver } from './support/receiver.ts';
import { seedPartner } from './support/seed.ts';
import { pageView, type TrackedSite, trackedChild } from './support/tracker.ts';

/**
 * Alerts and CRM pushes through the outbox: a signal writes one delivery per integration in the
 * transaction that made it, the webhook engine sends it (chat webhooks to real receivers on
 * 127.0.0.1, HubSpot at msw's boundary), and what happened is counted where the user sees it: the
 * receiver, the deliveries list, the integration's status, the visitor's crm_status.
 *
 * 17.x is Apple's own network: a US business in the shipped data, identified without a provider.
 */
const APPLE = (n: number) => `17.253.${Math.floor(n / 250)}.${(n % 250) + 1}`;
let nextApple = 1;
const apple = () => APPLE(nextApple++);
/** In Germany with no local answer: the table provider names SAP. */
const SAP = '194.39.131.1';
const sap = tableProvider('alpha', { [SAP]: { domain: 'sap.com', company_name: 'SAP SE', confidence: 0.9, traffic_type: 'business' } });

const hubspotCalls: { path: string; auth: string | null; body: Json }[] = [];
const hubspot = setupServer(
  http.post('https://api.hubapi.com/crm/v3/objects/companies/search', async ({ request }) => {
    hubspotCalls.push({ path: 'companies/search', auth: request.headers.get('authorization'), body: (await request.json()) as Json });
    return HttpResponse.json({ total: 1, results: [{ id: '9001', properties: { domain: 'apple.com' } }] });
  }),
  http.post('https://api.hubapi.com/crm/v3/objects/notes/search', async ({ request }) => {
    hubspotCalls.push({ path: 'notes/search', auth: request.headers.get('authorization'), body: (await request.json()) as Json });
    return HttpResponse.json({ total: 0, results: [] });
  }),
  http.post('https://api.hubapi.com/crm/v3/objects/notes', async ({ request }) => {
    hubspotCalls.push({ path: 'notes', auth: request.headers.get('authorization'), body: (await request.json()) as Json });
    return HttpResponse.json({ id: '7001' }, { status: 201 });
  }),
);

let env: TestEnv;
let partner: Awaited<ReturnType<typeof seedPartner>>;

beforeAll(async () => {
  hubspot.listen({ onUnhandledRequest: 'bypass' });
  env = await createTestEnv({
    ip: realIpDeps({ providers: [sap.provider], timeoutMs: 300 }),
    pool: 8,
    publicBaseUrl: 'https://sightline.example.net',
  });
  partner = await seedPartner(env.deps, { quota: 1000 });
});
afterAll(async () => {
  hubspot.close();
  await env.close();
});

const site = () => trackedChild(env, partner.key, { monthly_id_quota: 200 });

async function identify(s: TrackedSite, ip: string, path = '/pricing') {
  await pageView(env, s, ip, { path });
  await workTrackerQueue({ ctx: env.deps, input: {} });
  await env.settle();
}

async function deliveries(s: TrackedSite, query: Record<string, string> = {}) {
  const res = await call(env, 'integration-deliveries', { key: s.key, query });
  expect(res.status).toBe(200);
  return res.body.deliveries as Json[];
}

async function createIntegration(s: TrackedSite, body: Json) {
  const res = await call(env, 'integration-create', { key: s.key, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return (res.body.integration as Json).id as string;
}

describe('a Slack alert', () => {
  it('is a Block Kit message at the channel’s webhook naming the company, its domain, pages and engaged time', async () => {
    const receiver = await startReceiver();
    try {
      const s = await site();
      const id = await createIntegration(s, { kind: 'slack', name: 'Sales channel', webhook_url: receiver.url, signals: ['visitor_identified'] });
      const ip = apple();
      await identify(s, ip);
      expect(receiver.received).toHaveLength(1);
      const body = JSON.parse(receiver.received[0]?.body ?? '{}') as { text: string; blocks: Json[] };
      expect(body.text).toContain('Apple');
      const shown = JSON.stringify(body.blocks);
      expect(shown).toContain('apple.com');
      expect(shown).toContain('/pricing');
      expect(body.blocks.length).toBeGreaterThan(1);
      // The button opens the visitor's page in the console.
      const [identification] = await env.db<{ id: string }>`select id from identifications where website_id = ${s.websiteId} and ip = ${ip}::inet`;
      expect(shown).toContain(`https://sightline.example.net/console/#/visitor/${ip}/${identification?.id}`);
      const [delivery] = await deliveries(s, { integration_id: id });
      expect(delivery).toMatchObject({ integration_id: id, signal: 'visitor_identified', delivery_status: 'delivered', attempts: 1 });
      expect((delivery?.payload as Json | undefined)?.data).toMatchObject({ ip, tracker_site: s.domain });
    } finally {
      await receiver.close();
    }
  });

  it('as a daily digest, sends the day’s companies once each, in one message after the day ends', async () => {
    const receiver = await startReceiver();
    try {
      const s = await site();
      const id = await createIntegration(s, {
        kind: 'slack',
        name: 'daily',
        webhook_url: receiver.url,
        signals: ['visitor_identified', 'high_intent'],
        digest: true,
      });
      await identify(s, apple());
      await identify(s, apple());
      await identify(s, SAP);
      await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
      expect(receiver.received).toHaveLength(0);
      const tomorrow = new Date(Date.now() + 86_400_000);
      await sweepWebhookDeliveries({ ctx: env.deps, input: { now: tomorrow } });
      expect(receiver.received).toHaveLength(1);
      const shown = receiver.received[0]?.body ?? '';
      expect(shown.split('apple.com').length - 1).toBeGreaterThan(0);
      expect(shown).toContain('sap.com');
      const body = JSON.parse(shown) as { blocks: Json[] };
      const companies = body.blocks.filter((b) => JSON.stringify(b).includes('apple.com') && b.type === 'section');
      expect(companies).toHaveLength(1);
      const [d] = await deliveries(s, { integration_id: id });
      expect(d).toMatchObject({ signal: 'digest', delivery_status: 'delivered' });
      // The day's items went with it: a second run sends nothing.
      await sweepWebhookDeliveries({ ctx: env.deps, input: { now: tomorrow } });
      expect(receiver.received).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('keeps its webhook URL sealed: never listed, never stored as text', async () => {
    const s = await site();
    const url = 'http://127.0.0.1:9/hooks/T000/B000/secret-path-xyz';
    const id = await createIntegration(s, { kind: 'slack', name: 'x', webhook_url: url, signals: ['visitor_identified'] });
    const list = await call(env, 'integrations', { key: s.key });
    expect(list.status).toBe(200);
    expect(JSON.stringify(list.body)).not.toContain('secret-path-xyz');
    expect((list.body.integrations as Json[]).map((i) => i.id)).toContain(id);
    const [row] = await env.db<{ secret_sealed: string }>`select secret_sealed from integrations where id = ${id}`;
    expect(row?.secret_sealed).not.toContain('secret-path-xyz');
  });

  it('sends one message per company per cooldown, however many signals it makes', async () => {
    const receiver = await startReceiver();
    try {
      const s = await site();
      const id = await createIntegration(s, { kind: 'slack', name: 'busy', webhook_url: receiver.url, signals: ['visitor_identified'] });
      const ip = apple();
      await identify(s, ip);
      // 50 more signals for the same company at once, each in its own transaction.
      const written = await Promise.all(
        Array.from({ length: 50 }, () => env.db<{ n: number }>`select sl_emit_signal(${s.websiteId}, ${ip}::inet, 'visitor_identified') as n`),
      );
      expect(written.reduce((sum, [r]) => sum + (r?.n ?? 0), 0)).toBe(0);
      await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
      expect(receiver.received).toHaveLength(1);
      expect(await deliveries(s, { integration_id: id })).toHaveLength(1);
      // With no cooldown, each signal is a message.
      const upd = await call(env, 'integration-update', { key: s.key, body: { integration_id: id, cooldown_seconds: 0 } });
      expect(upd.status).toBe(200);
      const [again] = await env.db<{ n: number }>`select sl_emit_signal(${s.websiteId}, ${ip}::inet, 'visitor_identified') as n`;
      expect(again?.n).toBe(1);
    } finally {
      await receiver.close();
    }
  });

  it('honours Retry-After on a 429, and is paused, the account told, when the channel is gone (410)', async () => {
    let answer = 429;
    const receiver = await startReceiver((_q, res) => {
      if (answer === 429) res.writeHead(429, { 'retry-after': '600' }).end('rate_limited');
      else if (answer === 410) res.writeHead(410).end('channel_is_archived');
      else res.end('ok');
    });
    const childHook = await startReceiver();
    try {
      const s = await trackedChild(env, partner.key, { monthly_id_quota: 200, webhook_url: childHook.url, webhook_secret: 'child-secret-9' });
      const id = await createIntegration(s, { kind: 'slack', name: 'flaky', webhook_url: receiver.url, signals: ['visitor_identified'] });
      await identify(s, apple());
      const [d] = await deliveries(s, { integration_id: id });
      expect(d).toMatchObject({ delivery_status: 'pending', attempts: 1 });
      const waitMs = new Date(d?.next_attempt_at as string).getTime() - new Date(d?.last_attempt_at as string).getTime();
      expect(waitMs).toBeGreaterThanOrEqual(600_000 - 1000);

      answer = 410;
      await sweepWebhookDeliveries({ ctx: env.deps, input: { now: new Date(Date.now() + 11 * 60_000) } });
      const [failed] = await deliveries(s, { integration_id: id });
      expect(failed).toMatchObject({ delivery_status: 'failed', attempts: 2 });
      expect(failed?.last_error).toContain('410');
      const [integration] = ((await call(env, 'integrations', { key: s.key })).body.integrations as Json[]).filter((i) => i.id === id);
      expect(integration).toMatchObject({ status: 'paused' });
      expect(integration?.paused_reason).toContain('410');
      // No new delivery while paused.
      const [n] = await env.db<{ n: number }>`select sl_emit_signal(${s.websiteId}, ${APPLE(999)}::inet, 'visitor_identified') as n`;
      expect(n?.n).toBe(0);
      await env.settle();
      await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
      const told = childHook.received.filter((r) => r.headers['x-service-event'] === 'integration.paused');
      expect(told).toHaveLength(1);
      expect(JSON.parse(told[0]?.body ?? '{}').data).toMatchObject({ integration_id: id, kind: 'slack', name: 'flaky' });

      // Resumed and replayed: sent again, and delivered.
      answer = 200;
      receiver.received.length = 0;
      const resumed = await call(env, 'integration-update', { key: s.key, body: { integration_id: id, status: 'active' } });
      expect(resumed.body.integration).toMatchObject({ status: 'active', paused_reason: null, failures_in_row: 0 });
      const replay = await call(env, 'integration-delivery-replay', { key: s.key, body: { delivery_id: failed?.id } });
      expect(replay.status, JSON.stringify(replay.body)).toBe(200);
      await env.settle();
      expect((await deliveries(s, { integration_id: id }))[0]).toMatchObject({ delivery_status: 'delivered' });
    } finally {
      await receiver.close();
      await childHook.close();
    }
  });
});

describe('a destination that keeps failing', () => {
  it('is paused at its tenth failed attempt in a row, and a success in between starts the count again', async () => {
    let status = 500;
    const receiver = await startReceiver((_q, res) => res.writeHead(status).end(status === 200 ? 'ok' : 'oops'));
    try {
      const s = await site();
      const id = await createIntegration(s, {
        kind: 'teams',
        name: 'shaky',
        webhook_url: receiver.url,
        signals: ['visitor_identified'],
        cooldown_seconds: 0,
      });
      const state = async () =>
        (
          await env.db<{ status: string; failures_in_row: number }>`
        select status, failures_in_row from integrations where id = ${id}`
        )[0];
      await identify(s, apple());
      expect(await state()).toEqual({ status: 'active', failures_in_row: 1 });
      status = 200;
      await identify(s, apple());
      expect(await state()).toEqual({ status: 'active', failures_in_row: 0 });
      // Nine failures in a row so far, then the tenth.
      status = 500;
      await env.db`update integrations set failures_in_row = 9 where id = ${id}`;
      await identify(s, apple());
      const paused = await state();
      expect(paused).toEqual({ status: 'paused', failures_in_row: 10 });
      // Its deliveries still waiting for a retry are settled as failed: none is pending while paused.
      const pending = await deliveries(s, { integration_id: id, status: 'pending' });
      expect(pending).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});

describe('a returning company', () => {
  /** The visitor as if its last visit were `days` ago. */
  const away = (s: TrackedSite, ip: string, days: number) =>
    env.db`update visitors set first_seen = now() - ${days} * interval '1 day', last_seen = now() - ${days} * interval '1 day'
           where website_id = ${s.websiteId} and ip = ${ip}::inet`;

  it('after the quiet period emits one visitor_returned to the child’s webhook and its integrations; a repeat within it, none', async () => {
    const childHook = await startReceiver();
    const channel = await startReceiver();
    try {
      const s = await trackedChild(env, partner.key, { monthly_id_quota: 200, webhook_url: childHook.url, webhook_secret: 'child-secret-r' });
      await createIntegration(s, { kind: 'slack', name: 'returns', webhook_url: channel.url, signals: ['visitor_returned'], cooldown_seconds: 0 });
      const ip = apple();
      await pageView(env, s, ip, { path: '/', session: 'first' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      await away(s, ip, 8);
      await pageView(env, s, ip, { path: '/pricing', session: 'second' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      // A new visit the next minute is no return.
      await pageView(env, s, ip, { path: '/docs', session: 'third' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
      const returned = childHook.received.filter((r) => r.headers['x-service-event'] === 'visitor_returned');
      expect(returned).toHaveLength(1);
      const data = JSON.parse(returned[0]?.body ?? '{}').data as Json;
      expect(data).toMatchObject({ ip, website_id: s.websiteId, company: { name: 'Apple Inc.', domain: 'apple.com' } });
      expect(Date.now() - new Date(data.previous_visit_at as string).getTime()).toBeGreaterThan(7 * 86_400_000);
      expect(channel.received).toHaveLength(1);
      expect(JSON.parse(channel.received[0]?.body ?? '{}').text).toMatch(/returned/i);
    } finally {
      await childHook.close();
      await channel.close();
    }
  });

  it('keeps to the account’s quiet period: 8 days away is no return when it is 30', async () => {
    const childHook = await startReceiver();
    try {
      const s = await trackedChild(env, partner.key, { monthly_id_quota: 200, webhook_url: childHook.url, webhook_secret: 'child-secret-q' });
      await env.db`update accounts set return_quiet_days = 30 where id = (select account_id from api_keys where id = ${s.apiKeyId})`;
      const ip = apple();
      await pageView(env, s, ip, { session: 'one' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      await away(s, ip, 8);
      await pageView(env, s, ip, { session: 'two' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      await away(s, ip, 31);
      await pageView(env, s, ip, { session: 'three' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
      expect(childHook.received.filter((r) => r.headers['x-service-event'] === 'visitor_returned')).toHaveLength(1);
    } finally {
      await childHook.close();
    }
  });
});

describe('high intent and ICP signals', () => {
  it('sends high_intent when an identified visitor becomes one of high intent, not before', async () => {
    const channel = await startReceiver();
    try {
      const s = await site();
      await createIntegration(s, { kind: 'teams', name: 'intent', webhook_url: channel.url, signals: ['high_intent'], cooldown_seconds: 0 });
      const ip = apple();
      await pageView(env, s, ip, { path: '/', session: 'a' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      await env.settle();
      expect(channel.received).toHaveLength(0);
      await pageView(env, s, ip, { path: '/blog', session: 'a' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      expect(channel.received).toHaveLength(0);
      await pageView(env, s, ip, { path: '/about', session: 'a' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
      expect(channel.received).toHaveLength(1);
      const card = JSON.parse(channel.received[0]?.body ?? '{}') as { type: string; attachments: { contentType: string }[] };
      expect(card.type).toBe('message');
      expect(card.attachments[0]?.contentType).toBe('application/vnd.microsoft.card.adaptive');
      expect(channel.received[0]?.body).toContain('apple.com');
      // A fourth page: high intent already, no second signal.
      await pageView(env, s, ip, { path: '/team', session: 'a' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
      expect(channel.received).toHaveLength(1);
    } finally {
      await channel.close();
    }
  });

  it('sends watched_visit when a watched visitor opens a visit', async () => {
    const channel = await startReceiver();
    try {
      const s = await site();
      await createIntegration(s, { kind: 'slack', name: 'watch', webhook_url: channel.url, signals: ['watched_visit'], cooldown_seconds: 0 });
      const ip = apple();
      await identify(s, ip);
      expect(channel.received).toHaveLength(0);
      await env.db`update visitors set is_watched = true where website_id = ${s.websiteId} and ip = ${ip}::inet`;
      await pageView(env, s, ip, { path: '/pricing', session: 'watched-again' });
      await workTrackerQueue({ ctx: env.deps, input: {} });
      await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
      expect(channel.received).toHaveLength(1);
      expect(JSON.parse(channel.received[0]?.body ?? '{}').text).toMatch(/watched/i);
    } finally {
      await channel.close();
    }
  });

  it('sends icp_qualified once per identification and ICP, with the ICP’s name and score', async () => {
    const channel = await startReceiver();
    try {
      const s = await site();
      await createIntegration(s, { kind: 'slack', name: 'icp', webhook_url: channel.url, signals: ['icp_qualified'], cooldown_seconds: 0 });
      await seedUsCompaniesIcp(env.db, s.apiKeyId);
      await identify(s, apple());
      await scoreIdentifications({ ctx: env.deps, input: {} });
      await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
      expect(channel.received).toHaveLength(1);
      const shown = channel.received[0]?.body ?? '';
      expect(shown).toContain('US companies');
      expect(shown).toContain('100');
      // Scored again (a backfill): still qualified, nothing new.
      await env.db`update identifications set scored_at = null where website_id = ${s.websiteId}`;
      await scoreIdentifications({ ctx: env.deps, input: {} });
      await sweepWebhookDeliveries({ ctx: env.deps, input: {} });
      expect(channel.received).toHaveLength(1);
    } finally {
      await channel.close();
    }
  });
});

describe('a HubSpot push', () => {
  it('finds the company by domain, notes the visit, and marks the visitor pushed with the CRM’s id', async () => {
    hubspotCalls.length = 0;
    const s = await site();
    await createIntegration(s, { kind: 'hubspot', name: 'CRM', token: 'pat-na1-abcdef123456', signals: ['visitor_identified'] });
    const ip = apple();
    await identify(s, ip);
    expect(hubspotCalls.map((c) => c.path)).toEqual(['companies/search', 'notes/search', 'notes']);
    expect(hubspotCalls.every((c) => c.auth === 'Bearer pat-na1-abcdef123456')).toBe(true);
    expect(JSON.stringify(hubspotCalls[0]?.body)).toContain('apple.com');
    const [v] = await env.db<{ crm_status: string; crm_id: string }>`
      select crm_status, crm_id from visitors where website_id = ${s.websiteId} and ip = ${ip}::inet`;
    expect(v).toEqual({ crm_status: 'pushed', crm_id: '9001' });
    const list = await call(env, 'list-visitors', { key: s.key });
    const row = (list.body.visitors as Json[] | undefined)?.find((r) => r.domain === 'apple.com');
    expect(row).toMatchObject({ crm_status: 'pushed', crm_id: '9001' });
  });
});

describe('integration endpoints refuse what they cannot do', () => {
  it('answers 400 for a missing or misplaced credential, an unknown signal or kind, and changes nothing', async () => {
    const s = await site();
    const cases: Json[] = [
      { kind: 'slack', name: 'a', signals: ['visitor_identified'] },
      { kind: 'slack', name: 'a', webhook_url: 'https://hooks.example.com/x', token: 'abcdefgh', signals: ['visitor_identified'] },
      { kind: 'hubspot', name: 'a', webhook_url: 'https://hooks.example.com/x', signals: ['visitor_identified'] },
      { kind: 'hubspot', name: 'a', token: 'abcdefgh', signals: ['everything'] },
      { kind: 'hubspot', name: 'a', token: 'abcdefgh', signals: [] },
      { kind: 'email', name: 'a', token: 'abcdefgh', signals: ['visitor_identified'] },
      { kind: 'slack', name: 'a', webhook_url: 'http://169.254.169.254/latest', signals: ['visitor_identified'] },
    ];
    for (const body of cases) {
      const res = await call(env, 'integration-create', { key: s.key, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.success).toBe(false);
    }
    expect((await call(env, 'integrations', { key: s.key })).body.integrations).toEqual([]);
  });

  it('keeps one account’s integrations and deliveries from another account’s key', async () => {
    const a = await site();
    const b = await site();
    const id = await createIntegration(a, { kind: 'hubspot', name: 'mine', token: 'abcdefgh12', signals: ['visitor_identified'] });
    expect((await call(env, 'integration-update', { key: b.key, body: { integration_id: id, name: 'theirs' } })).status).toBe(404);
    expect((await call(env, 'integration-delete', { key: b.key, body: { integration_id: id } })).status).toBe(404);
    expect((await call(env, 'integrations', { key: b.key })).body.integrations).toEqual([]);
    const mine = await call(env, 'integration-update', { key: a.key, body: { integration_id: id, signals: ['visitor_returned', 'high_intent'] } });
    expect(mine.body.integration).toMatchObject({ name: 'mine', signals: ['visitor_returned', 'high_intent'] });
    expect((await call(env, 'integration-update', { key: a.key, body: { integration_id: id } })).status).toBe(400);
    expect((await call(env, 'integration-delete', { key: a.key, body: { integration_id: id } })).status).toBe(200);
    expect((await call(env, 'integration-delete', { key: a.key, body: { integration_id: id } })).status).toBe(404);
  });
});
