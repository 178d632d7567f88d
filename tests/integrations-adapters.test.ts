import type http from 'node:http';
import {
  type DeliveryOutcome,
  parseRetryAfter,
  postToChatWebhook,
  pushToHubSpot,
  pushToPipedrive,
  type Send,
  type SignalMessage,
  slackDigest,
  slackMessage,
  teamsDigest,
  teamsMessage,
} from '@sightline/core/integrations/index';
import { delay, HttpResponse, http as mswHttp } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closedPort, type ReceivedRequest, startReceiver } from './support/receiver.ts';

/*
 * The adapters of alerts (Slack incoming webhooks, Teams Workflows) and CRM pushes (HubSpot, Pipedrive).
 * Slack and Teams are posted to real HTTP receivers on 127.0.0.1 answering as the vendors document;
 * HubSpot and Pipedrive are in-memory fakes behind msw at their documented endpoints, so a test can
 * count the companies and notes a push (and its retry) leaves behind.
 */

const send: Send = (url, init) => fetch(url, init);

function signal(overrides: Partial<SignalMessage> = {}, visitor: Partial<SignalMessage['visitor']> = {}): SignalMessage {
  return {
    signal: 'high_intent',
    occurred_at: '2026-11-27T10:15:00.000Z',
    website: { id: '6f1c2a8e-0000-4000-8000-000000000001', domain: 'shop.example' },
    visitor: {
      id: '0b7e9f3c-0000-4000-8000-000000000002',
      company_name: 'Acme Inc',
      domain: 'acme.com',
      country_code: 'DE',
      pages: ['/pricing', '/docs/api', '/contact'],
      page_count: 3,
      active_ms: 200_000,
      first_seen: '2026-11-27T10:00:00.000Z',
      last_seen: '2026-11-27T10:15:00.000Z',
      high_intent: true,
      ...visitor,
    },
    icp: { name: 'Enterprise SaaS', score: 87 },
    console_url: 'https://sightline.example/console/#/visitors/0b7e9f3c-0000-4000-8000-000000000002',
    ...overrides,
  };
}

type Failure = Extract<DeliveryOutcome, { ok: false }>;
function failure(outcome: DeliveryOutcome): Failure {
  expect(outcome.ok).toBe(false);
  return outcome as Failure;
}

/** Every text Slack renders in a Block Kit body, with the limit Slack documents for it. */
function slackTexts(blocks: Record<string, unknown>[]): { text: string; max: number }[] {
  const out: { text: string; max: number }[] = [];
  for (const b of blocks) {
    const t = b.text as { text: string } | undefined;
    if (b.type === 'header' && t) out.push({ text: t.text, max: 150 });
    if (b.type === 'section' && t) out.push({ text: t.text, max: 3000 });
    for (const f of (b.fields as { text: string }[] | undefined) ?? []) out.push({ text: f.text, max: 2000 });
    const buttons = [
      ...((b.elements as Record<string, unknown>[] | undefined) ?? []),
      ...(b.accessory ? [b.accessory as Record<string, unknown>] : []),
    ];
    for (const e of buttons) if (e.type === 'button') out.push({ text: (e.text as { text: string }).text, max: 75 });
  }
  return out;
}

const msw = setupServer();
beforeAll(() => msw.listen({ onUnhandledRequest: 'bypass' }));
afterEach(() => msw.resetHandlers());
afterAll(() => msw.close());

describe('Retry-After', () => {
  const now = Date.parse('2026-11-27T10:00:00Z');
  it('reads delay-seconds and HTTP-dates, and leaves anything else to the outbox', () => {
    expect(parseRetryAfter('30', now)).toBe(30_000);
    expect(parseRetryAfter('Fri, 27 Nov 2026 10:00:45 GMT', now)).toBe(45_000);
    expect(parseRetryAfter('Fri, 27 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});

describe('Slack incoming webhooks', () => {
  const SECRET_PATH = '/services/T0SLACK01/B0HOOK002/xoxSecretHookToken0123';

  it('receives a Block Kit message naming the company, domain, pages, engaged time, ICP score, country and console link', async () => {
    const receiver = await startReceiver();
    try {
      const outcome = await postToChatWebhook({ send }, `http://127.0.0.1:${receiver.port}${SECRET_PATH}`, slackMessage(signal()));
      expect(outcome).toEqual({ ok: true });
      const [req] = receiver.received as [ReceivedRequest];
      expect(req.method).toBe('POST');
      expect(req.url).toBe(SECRET_PATH);
      expect(req.headers['content-type']).toBe('application/json');
      const body = JSON.parse(req.body) as { text: string; blocks: Record<string, unknown>[] };
      expect(body.text).toBe('High-intent visit on shop.example: Acme Inc (acme.com)');
      expect(body.blocks.map((b) => b.type)).toEqual(['header', 'section', 'section', 'actions']);
      expect(body.blocks[0]).toEqual({ type: 'header', text: { type: 'plain_text', text: 'High-intent visit on shop.example', emoji: true } });
      expect(body.blocks[1]).toMatchObject({ type: 'section', text: { type: 'mrkdwn', text: '*Acme Inc (acme.com)*  :fire: high intent' } });
      const fields = ((body.blocks[2]?.fields ?? []) as { type: string; text: string }[]).map((f) => f.text);
      expect(fields).toEqual([
        '*Pages* (3 pages)\n• /pricing\n• /docs/api\n• /contact',
        '*Engaged time*\n3m 20s',
        '*ICP score*\nEnterprise SaaS: 87/100',
        '*Country*\nDE',
      ]);
      expect(body.blocks[3]).toEqual({
        type: 'actions',
        elements: [
          {
            type: 'button',
            text: { type: 'plain_text', text: 'Open in Sightline', emoji: true },
            url: 'https://sightline.example/console/#/visitors/0b7e9f3c-0000-4000-8000-000000000002',
            action_id: 'open_visitor',
          },
        ],
      });
    } finally {
      await receiver.close();
    }
  });

  it('escapes &, < and > in mrkdwn, so a company named <!channel> pings nobody', () => {
    const body = slackMessage(signal({}, { company_name: '<!channel> & <https://evil.example|Acme>', domain: 'acme.com' }));
    const rendered = JSON.stringify(body.blocks.slice(1)) + body.text;
    expect(rendered).not.toContain('<!channel>');
    expect(rendered).not.toContain('<https://evil');
    expect(body.text).toContain('&lt;!channel&gt; &amp; &lt;https://evil.example|Acme&gt;');
  });

  it('keeps every text within Block Kit limits, however long the company, pages and ICP name', () => {
    const long = signal(
      { icp: { name: 'I'.repeat(5000), score: 99.6 }, console_url: `https://sightline.example/${'x'.repeat(5000)}` },
      {
        company_name: `${'<&>'.repeat(2000)}Acme`,
        domain: `${'d'.repeat(60)}.com`,
        pages: Array.from({ length: 40 }, (_, i) => `/${'&'.repeat(900)}${i}`),
        page_count: 400,
      },
    );
    for (const body of [
      slackMessage(long),
      slackDigest(
        Array.from({ length: 30 }, (_, i) => ({ ...long, visitor: { ...long.visitor, domain: `c${i}.com` } })),
        '2026-11-27',
      ),
    ]) {
      expect(body.blocks.length).toBeLessThanOrEqual(50);
      expect(body.text.length).toBeLessThanOrEqual(4000);
      for (const { text, max } of slackTexts(body.blocks)) {
        expect(text.length).toBeLessThanOrEqual(max);
        expect(text).not.toMatch(/&(?!amp;|lt;|gt;)/);
      }
    }
    // A console link too long for a button is left out rather than sent broken.
    expect(JSON.stringify(slackMessage(long))).not.toContain('"button"');
  });

  it('a digest carries each company once, best ICP score first, with one link each', async () => {
    const receiver = await startReceiver();
    try {
      const day: SignalMessage[] = [];
      for (let i = 0; i < 50; i++) {
        day.push(
          signal(
            { icp: { name: 'Enterprise SaaS', score: 60 + (i % 5) } },
            { domain: i % 2 ? 'ACME.com' : 'acme.com', last_seen: `2026-11-27T10:${String(i).padStart(2, '0')}:00.000Z` },
          ),
        );
      }
      day.push(signal({ icp: { name: 'Mid-market', score: 91 } }, { company_name: 'Globex', domain: 'globex.io' }));
      day.push(signal({ icp: null, signal: 'visitor_returned' }, { company_name: 'Initech', domain: 'initech.com' }));
      day.push(signal({ icp: null, console_url: null }, { company_name: 'Initech', domain: 'initech.com' }));
      const outcome = await postToChatWebhook({ send }, `http://127.0.0.1:${receiver.port}${SECRET_PATH}`, slackDigest(day, '2026-11-27'));
      expect(outcome).toEqual({ ok: true });
      const body = JSON.parse((receiver.received[0] as ReceivedRequest).body) as { text: string; blocks: Record<string, unknown>[] };
      expect(body.blocks[0]).toMatchObject({ type: 'header', text: { text: '3 companies on shop.example · 2026-11-27' } });
      const sections = body.blocks.filter((b) => b.type === 'section').map((b) => (b.text as { text: string }).text);
      expect(sections).toHaveLength(3);
      expect(sections[0]).toMatch(/^\*Globex \(globex\.io\)\*\n3 pages · 3m 20s engaged · Mid-market: 91\/100 · DE$/);
      expect(sections[1]).toContain('*Acme Inc (acme.com)*');
      expect(sections[1]).toContain('Enterprise SaaS: 64/100');
      expect(sections[2]).toContain('*Initech (initech.com)*');
      for (const company of ['Acme Inc', 'Globex', 'Initech']) expect(body.text.split(company)).toHaveLength(2);
      const buttons = body.blocks.flatMap((b) => (b.accessory ? [b.accessory as { action_id: string; url: string }] : []));
      expect(new Set(buttons.map((b) => b.action_id)).size).toBe(buttons.length);
      expect(buttons).toHaveLength(3);
    } finally {
      await receiver.close();
    }
  });

  it('a digest past its company limit counts the rest instead of listing them', () => {
    const many = Array.from({ length: 45 }, (_, i) => signal({}, { company_name: `Company ${i}`, domain: `company${i}.com` }));
    const body = slackDigest(many, '2026-11-27');
    expect(body.blocks.filter((b) => b.type === 'section')).toHaveLength(20);
    expect(body.blocks.at(-1)).toEqual({ type: 'context', elements: [{ type: 'mrkdwn', text: 'and 25 more in the console' }] });
  });

  it.each([
    [400, 'invalid_payload'],
    [403, 'action_prohibited'],
    [404, 'no_service'],
    [404, 'channel_not_found'],
    [410, 'channel_is_archived'],
  ])('HTTP %i %s is permanent, and the error never shows the hook’s secret path', async (status, reason) => {
    const receiver = await startReceiver((_req, res) => {
      res.statusCode = status;
      res.end(reason);
    });
    try {
      const f = failure(await postToChatWebhook({ send }, `http://127.0.0.1:${receiver.port}${SECRET_PATH}`, slackMessage(signal())));
      expect(f).toEqual({ ok: false, retryable: false, status, error: `127.0.0.1:${receiver.port} answered HTTP ${status}: ${reason}` });
    } finally {
      await receiver.close();
    }
  });

  it('429 is retried after its Retry-After; 5xx and no answer at all are retried', async () => {
    let answer: (res: http.ServerResponse) => void = () => undefined;
    const receiver = await startReceiver((_req, res) => answer(res));
    const url = `http://127.0.0.1:${receiver.port}${SECRET_PATH}`;
    try {
      answer = (res) => {
        res.writeHead(429, { 'Retry-After': '30' }).end('rate_limited');
      };
      expect(await postToChatWebhook({ send }, url, slackMessage(signal()))).toMatchObject({
        ok: false,
        retryable: true,
        retryAfterMs: 30_000,
        status: 429,
      });
      answer = (res) => {
        res.writeHead(429, { 'Retry-After': 'Fri, 27 Nov 2026 10:01:00 GMT' }).end('rate_limited');
      };
      const now = () => Date.parse('2026-11-27T10:00:00Z');
      expect(await postToChatWebhook({ send, now }, url, slackMessage(signal()))).toMatchObject({ retryable: true, retryAfterMs: 60_000 });
      answer = (res) => {
        res.writeHead(500).end('rollup_error');
      };
      expect(await postToChatWebhook({ send }, url, slackMessage(signal()))).toMatchObject({ ok: false, retryable: true, status: 500 });
    } finally {
      await receiver.close();
    }
    const down = failure(await postToChatWebhook({ send }, `http://127.0.0.1:${await closedPort()}${SECRET_PATH}`, slackMessage(signal())));
    expect(down.retryable).toBe(true);
    expect(down.status).toBeUndefined();
    expect(down.error).not.toContain('xoxSecretHookToken0123');
  });
});

describe('chat webhook answers', () => {
  it('a 2xx whose body breaks off was delivered: a retry would post the message twice', async () => {
    const receiver = await startReceiver((_req, res) => {
      res.writeHead(200, { 'Content-Length': '1000' });
      res.write('o', () => res.socket?.destroy());
    });
    try {
      expect(await postToChatWebhook({ send }, `http://127.0.0.1:${receiver.port}/services/T1/B2/secret-path-123`, slackMessage(signal()))).toEqual({
        ok: true,
      });
    } finally {
      await receiver.close();
    }
  });
});

describe('Microsoft Teams Workflows webhooks', () => {
  const SECRET_URL = (port: number) =>
    `http://127.0.0.1:${port}/workflows/4f1e2d3c5b6a/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=TeamsSig_Secret_0123456789`;

  it('receives an Adaptive Card naming the company, domain, pages, engaged time, ICP score, country and console link', async () => {
    const receiver = await startReceiver((_req, res) => {
      res.writeHead(202).end();
    });
    try {
      expect(await postToChatWebhook({ send }, SECRET_URL(receiver.port), teamsMessage(signal()))).toEqual({ ok: true });
      const body = JSON.parse((receiver.received[0] as ReceivedRequest).body);
      expect(body.type).toBe('message');
      expect(body.attachments).toHaveLength(1);
      expect(body.attachments[0].contentType).toBe('application/vnd.microsoft.card.adaptive');
      const card = body.attachments[0].content;
      expect(card).toMatchObject({ type: 'AdaptiveCard', $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', version: '1.4' });
      expect(card.body[0]).toMatchObject({ type: 'TextBlock', text: 'High-intent visit on shop.example' });
      expect(card.body[1]).toMatchObject({ type: 'TextBlock', text: 'Acme Inc (acme.com) · high intent' });
      expect(card.body[2]).toEqual({
        type: 'FactSet',
        facts: [
          { title: 'Pages', value: '3 pages: /pricing, /docs/api, /contact' },
          { title: 'Engaged time', value: '3m 20s' },
          { title: 'ICP score', value: 'Enterprise SaaS: 87/100' },
          { title: 'Country', value: 'DE' },
        ],
      });
      expect(card.actions).toEqual([
        {
          type: 'Action.OpenUrl',
          title: 'Open in Sightline',
          url: 'https://sightline.example/console/#/visitors/0b7e9f3c-0000-4000-8000-000000000002',
        },
      ]);
    } finally {
      await receiver.close();
    }
  });

  it('a company name cannot become a Markdown link in the card', () => {
    const card = teamsMessage(signal({}, { company_name: '[Click me](https://evil.example)' })).attachments[0].content;
    expect(JSON.stringify(card)).not.toContain('](https://evil.example)');
  });

  it('a digest carries each company once, one container each, and stays under the Teams message size', async () => {
    const receiver = await startReceiver((_req, res) => {
      res.writeHead(200).end();
    });
    try {
      const day = [
        ...Array.from({ length: 50 }, () => signal()),
        signal({ icp: { name: 'Mid-market', score: 91 } }, { company_name: 'Globex', domain: 'globex.io' }),
        signal({ icp: null }, { company_name: 'Initech', domain: 'initech.com' }),
      ];
      expect(await postToChatWebhook({ send }, SECRET_URL(receiver.port), teamsDigest(day, '2026-11-27'))).toEqual({ ok: true });
      const card = JSON.parse((receiver.received[0] as ReceivedRequest).body).attachments[0].content;
      expect(card.body[0].text).toBe('3 companies on shop.example · 2026-11-27');
      const containers = card.body.filter((e: { type: string }) => e.type === 'Container');
      expect(containers.map((c: { items: { text: string }[] }) => c.items[0]?.text)).toEqual([
        'Globex (globex.io)',
        'Acme Inc (acme.com)',
        'Initech (initech.com)',
      ]);
      expect(containers[1].selectAction).toEqual({ type: 'Action.OpenUrl', title: 'Open in Sightline', url: signal().console_url });

      const huge = Array.from({ length: 40 }, (_, i) =>
        signal({}, { company_name: `${'N'.repeat(400)}${i}`, domain: `c${i}.com`, pages: Array.from({ length: 5 }, () => '/'.padEnd(200, 'p')) }),
      );
      const big = teamsDigest(huge, '2026-11-27');
      expect(JSON.stringify(big).length).toBeLessThanOrEqual(20_000);
      expect(big.attachments[0].content.body.at(-1)).toMatchObject({ type: 'TextBlock', isSubtle: true });
    } finally {
      await receiver.close();
    }
  });

  it.each([400, 401, 403, 404, 413])('HTTP %i is permanent, and the error never shows the signature', async (status) => {
    // Power Automate's error bodies can quote the request; the echo proves it is cut out.
    const receiver = await startReceiver((req, res) => {
      res
        .writeHead(status, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'Refused', message: `refused ${req.url}` } }));
    });
    try {
      const f = failure(await postToChatWebhook({ send }, SECRET_URL(receiver.port), teamsMessage(signal())));
      expect(f.retryable).toBe(false);
      expect(f.status).toBe(status);
      expect(f.error).toContain(`answered HTTP ${status}: refused`);
      expect(f.error).not.toContain('TeamsSig_Secret_0123456789');
      expect(f.error).not.toContain('4f1e2d3c5b6a/triggers');
    } finally {
      await receiver.close();
    }
  });

  it('408, 429 (after its Retry-After) and 5xx are retried', async () => {
    let status = 408;
    const receiver = await startReceiver((_req, res) => {
      res.writeHead(status, status === 429 ? { 'Retry-After': '12' } : {}).end();
    });
    try {
      expect(await postToChatWebhook({ send }, SECRET_URL(receiver.port), teamsMessage(signal()))).toEqual({
        ok: false,
        retryable: true,
        status: 408,
        error: `127.0.0.1:${receiver.port} answered HTTP 408`,
      });
      status = 429;
      expect(await postToChatWebhook({ send }, SECRET_URL(receiver.port), teamsMessage(signal()))).toMatchObject({
        retryable: true,
        retryAfterMs: 12_000,
      });
      status = 502;
      expect(await postToChatWebhook({ send }, SECRET_URL(receiver.port), teamsMessage(signal()))).toMatchObject({ retryable: true, status: 502 });
    } finally {
      await receiver.close();
    }
  });
});

/* ------------------------------------------------------------------ HubSpot (msw at api.hubapi.com) */

const HUBSPOT = 'https://api.hubapi.com';
const HUBSPOT_TOKEN = 'pat-na1-11111111-2222-3333-4444-555555555555';

interface Seen {
  method: string;
  path: string;
  auth: string | null;
  apiToken: string | null;
  body: unknown;
}

function fakeHubSpot() {
  const companies: { id: string; properties: Record<string, string> }[] = [];
  const notes: { id: string; properties: Record<string, string>; associations: unknown }[] = [];
  const seen: Seen[] = [];
  let nextId = 5000;
  const record = async (request: Request) => {
    const body = request.method === 'POST' ? await request.clone().json() : null;
    seen.push({ method: request.method, path: new URL(request.url).pathname, auth: request.headers.get('authorization'), apiToken: null, body });
    return body as Record<string, unknown>;
  };
  const unauthorized = (request: Request) =>
    request.headers.get('authorization') === `Bearer ${HUBSPOT_TOKEN}`
      ? null
      : HttpResponse.json(
          {
            status: 'error',
            message: `Authentication credentials not found. The token ${request.headers.get('authorization')?.slice(7)} is not valid.`,
            correlationId: '4a0a2c0e-1111-2222-3333-444444444444',
            category: 'INVALID_AUTHENTICATION',
          },
          { status: 401 },
        );
  type Filter = { propertyName: string; operator: string; value: string };
  const filtersOf = (body: Record<string, unknown>) => ((body.filterGroups as { filters: Filter[] }[])[0]?.filters ?? []) as Filter[];
  const handlers = [
    mswHttp.post(`${HUBSPOT}/crm/v3/objects/companies/search`, async ({ request }) => {
      const body = await record(request);
      const denied = unauthorized(request);
      if (denied) return denied;
      const [f] = filtersOf(body);
      const results = companies.filter((c) => f?.operator === 'EQ' && c.properties.domain?.toLowerCase() === f.value.toLowerCase());
      return HttpResponse.json({ total: results.length, results: results.slice(0, Number(body.limit ?? 10)) });
    }),
    mswHttp.post(`${HUBSPOT}/crm/v3/objects/companies`, async ({ request }) => {
      const body = await record(request);
      const denied = unauthorized(request);
      if (denied) return denied;
      const company = { id: String(nextId++), properties: body.properties as Record<string, string> };
      companies.push(company);
      return HttpResponse.json({ ...company, createdAt: '2026-11-27T10:15:01Z', archived: false }, { status: 201 });
    }),
    mswHttp.post(`${HUBSPOT}/crm/v3/objects/notes/search`, async ({ request }) => {
      const body = await record(request);
      const denied = unauthorized(request);
      if (denied) return denied;
      const [f] = filtersOf(body);
      const results = notes.filter((n) => f?.operator === 'CONTAINS_TOKEN' && n.properties.hs_note_body?.split(/[^A-Za-z0-9]+/).includes(f.value));
      return HttpResponse.json({ total: results.length, results });
    }),
    mswHttp.post(`${HUBSPOT}/crm/v3/objects/notes`, async ({ request }) => {
      const body = await record(request);
      const denied = unauthorized(request);
      if (denied) return denied;
      const note = { id: String(nextId++), properties: body.properties as Record<string, string>, associations: body.associations };
      notes.push(note);
      return HttpResponse.json({ id: note.id, properties: note.properties }, { status: 201 });
    }),
  ];
  return { companies, notes, seen, handlers };
}

describe('HubSpot push', () => {
  let hub: ReturnType<typeof fakeHubSpot>;
  beforeEach(() => {
    hub = fakeHubSpot();
    msw.use(...hub.handlers);
  });
  const deps = () => ({ send, token: HUBSPOT_TOKEN });

  it('searches the company by domain, creates it with name and domain, then a note associated to it', async () => {
    const outcome = await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' });
    expect(hub.companies).toHaveLength(1);
    const company = hub.companies[0] as (typeof hub.companies)[number];
    expect(outcome).toEqual({ ok: true, externalId: company.id });
    expect(hub.seen.map((s) => `${s.method} ${s.path}`)).toEqual([
      'POST /crm/v3/objects/companies/search',
      'POST /crm/v3/objects/companies',
      'POST /crm/v3/objects/notes/search',
      'POST /crm/v3/objects/notes',
    ]);
    for (const s of hub.seen) expect(s.auth).toBe(`Bearer ${HUBSPOT_TOKEN}`);
    expect(hub.seen[0]?.body).toMatchObject({ filterGroups: [{ filters: [{ propertyName: 'domain', operator: 'EQ', value: 'acme.com' }] }] });
    expect(company.properties).toEqual({ name: 'Acme Inc', domain: 'acme.com' });
    const note = hub.notes[0];
    expect(note?.associations).toEqual([{ to: { id: company.id }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: 190 }] }]);
    expect(note?.properties.hs_timestamp).toBe('2026-11-27T10:15:00.000Z');
    const html = note?.properties.hs_note_body ?? '';
    for (const part of [
      'High-intent visit on shop.example',
      'Acme Inc (acme.com)',
      '3m 20s',
      'Enterprise SaaS: 87/100',
      '<li>/pricing</li>',
      signal().console_url,
    ]) {
      expect(html).toContain(part);
    }
  });

  it('uses the company the customer already has, never a second one', async () => {
    hub.companies.push({ id: '42', properties: { name: 'ACME (their spelling)', domain: 'acme.com' } });
    expect(await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' })).toEqual({ ok: true, externalId: '42' });
    expect(hub.companies).toHaveLength(1);
    expect(hub.companies[0]?.properties.name).toBe('ACME (their spelling)');
    expect(hub.notes[0]?.associations).toMatchObject([{ to: { id: '42' } }]);
  });

  it('a retry after a success creates neither a second company nor a second note', async () => {
    const first = await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' });
    hub.seen.length = 0;
    const again = await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' });
    expect(again).toEqual(first);
    expect(hub.companies).toHaveLength(1);
    expect(hub.notes).toHaveLength(1);
    expect(hub.seen.map((s) => s.path)).toEqual(['/crm/v3/objects/companies/search', '/crm/v3/objects/notes/search']);
    // Another signal for the same company is another note on the same company.
    expect(await pushToHubSpot(deps(), signal({ signal: 'visitor_returned' }), { idempotencyKey: 'evt-2' })).toEqual(first);
    expect(hub.companies).toHaveLength(1);
    expect(hub.notes).toHaveLength(2);
  });

  it('a retry after a timeout whose note did land adds no second note', async () => {
    msw.use(
      mswHttp.post(`${HUBSPOT}/crm/v3/objects/notes`, async ({ request }) => {
        const body = (await request.json()) as { properties: Record<string, string>; associations: unknown };
        hub.notes.push({ id: '9001', properties: body.properties, associations: body.associations });
        await delay(2_000);
        return HttpResponse.json({ id: '9001' }, { status: 201 });
      }),
    );
    const timedOut = failure(await pushToHubSpot({ ...deps(), timeoutMs: 150 }, signal(), { idempotencyKey: 'evt-1' }));
    expect(timedOut.retryable).toBe(true);
    expect(timedOut.error).toContain('no answer within the timeout');
    msw.resetHandlers(...hub.handlers);
    expect(await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' })).toEqual({ ok: true, externalId: hub.companies[0]?.id });
    expect(hub.notes).toHaveLength(1);
    expect(hub.companies).toHaveLength(1);
  });

  it('429 is retried after Retry-After, else after the rolling window HubSpot names', async () => {
    msw.use(
      mswHttp.post(`${HUBSPOT}/crm/v3/objects/companies/search`, () =>
        HttpResponse.json(
          { status: 'error', message: 'You have reached your secondly limit.', errorType: 'RATE_LIMIT', policyName: 'SECONDLY' },
          { status: 429, headers: { 'Retry-After': '7' } },
        ),
      ),
    );
    expect(await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' })).toEqual({
      ok: false,
      retryable: true,
      retryAfterMs: 7_000,
      status: 429,
      error: 'HubSpot answered HTTP 429: You have reached your secondly limit.',
    });
    msw.use(
      mswHttp.post(`${HUBSPOT}/crm/v3/objects/companies/search`, () =>
        HttpResponse.json(
          {
            status: 'error',
            message: 'You have reached your ten_secondly_rolling limit.',
            errorType: 'RATE_LIMIT',
            policyName: 'TEN_SECONDLY_ROLLING',
          },
          { status: 429, headers: { 'X-HubSpot-RateLimit-Interval-Milliseconds': '10000', 'X-HubSpot-RateLimit-Max': '100' } },
        ),
      ),
    );
    expect(await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' })).toMatchObject({ retryable: true, retryAfterMs: 10_000 });
    msw.use(
      mswHttp.post(`${HUBSPOT}/crm/v3/objects/companies/search`, () =>
        HttpResponse.json(
          { status: 'error', message: 'You have reached your daily limit.', errorType: 'RATE_LIMIT', policyName: 'DAILY' },
          { status: 429, headers: { 'X-HubSpot-RateLimit-Interval-Milliseconds': '10000' } },
        ),
      ),
    );
    const daily = failure(await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' }));
    expect(daily.retryable).toBe(true);
    expect(daily.retryAfterMs).toBeUndefined();
    expect(hub.companies).toHaveLength(0);
  });

  it('401 is permanent and the error never holds the token, even when HubSpot quotes it', async () => {
    const wrong = 'pat-na1-99999999-8888-7777-6666-000000000000';
    const f = failure(await pushToHubSpot({ send, token: wrong }, signal(), { idempotencyKey: 'evt-1' }));
    expect(f).toMatchObject({ retryable: false, status: 401 });
    expect(f.error).toContain('HubSpot answered HTTP 401: Authentication credentials not found.');
    expect(f.error).not.toContain(wrong);
    expect(hub.companies).toHaveLength(0);
  });

  it('5xx and a failed connection are retried; nothing the token touched is in the error', async () => {
    msw.use(
      mswHttp.post(`${HUBSPOT}/crm/v3/objects/notes`, () => HttpResponse.json({ status: 'error', message: 'internal error' }, { status: 502 })),
    );
    expect(await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' })).toMatchObject({ ok: false, retryable: true, status: 502 });
    msw.use(mswHttp.post(`${HUBSPOT}/crm/v3/objects/companies/search`, () => HttpResponse.error()));
    const f = failure(await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' }));
    expect(f.retryable).toBe(true);
    expect(f.error).toMatch(/^HubSpot: no answer/);
    expect(f.error).not.toContain(HUBSPOT_TOKEN);
  });

  it('an answer without the expected results is retried, never read as "no company" (no duplicate)', async () => {
    msw.use(mswHttp.post(`${HUBSPOT}/crm/v3/objects/companies/search`, () => HttpResponse.json({ status: 'ok' })));
    expect(await pushToHubSpot(deps(), signal(), { idempotencyKey: 'evt-1' })).toMatchObject({ ok: false, retryable: true, status: 200 });
    expect(hub.companies).toHaveLength(0);
  });

  it('a visitor without a company domain is refused before any request', async () => {
    const f = failure(await pushToHubSpot(deps(), signal({}, { domain: null }), { idempotencyKey: 'evt-1' }));
    expect(f.retryable).toBe(false);
    expect(hub.seen).toHaveLength(0);
  });
});

/* ------------------------------------------------------------------ Pipedrive (msw at api.pipedrive.com) */

const PIPEDRIVE = 'https://api.pipedrive.com';
const PIPEDRIVE_TOKEN = '659c9fddb16335e48cc67114694b52074e812e03';

function fakePipedrive(base = PIPEDRIVE) {
  const orgs: { id: number; name: string; custom_fields: Record<string, string> }[] = [];
  const notes: { id: number; org_id: number; content: string; add_time: number }[] = [];
  const seen: Seen[] = [];
  let nextId = 300;
  let clock = 0;
  const record = async (request: Request) => {
    const url = new URL(request.url);
    const body = request.method === 'POST' ? await request.clone().json() : null;
    seen.push({
      method: request.method,
      path: `${url.pathname}${url.search}`,
      auth: request.headers.get('x-api-token'),
      apiToken: url.searchParams.get('api_token'),
      body,
    });
    return body as Record<string, unknown>;
  };
  const unauthorized = (request: Request) =>
    request.headers.get('x-api-token') === PIPEDRIVE_TOKEN
      ? null
      : HttpResponse.json(
          {
            success: false,
            error: `unauthorized access for token ${request.headers.get('x-api-token')}`,
            errorCode: 401,
            error_info: 'Please check developers.pipedrive.com',
          },
          { status: 401 },
        );
  const handlers = [
    mswHttp.get(`${base}/api/v2/organizations/search`, async ({ request }) => {
      await record(request);
      const denied = unauthorized(request);
      if (denied) return denied;
      const q = new URL(request.url).searchParams;
      const term = (q.get('term') ?? '').toLowerCase();
      const exact = q.get('exact_match') === 'true';
      const matches = (value: string) => (exact ? value.toLowerCase() === term : value.toLowerCase().includes(term));
      const items = orgs.flatMap((o) => {
        const custom = q.get('fields')?.includes('custom_fields') ? Object.values(o.custom_fields).filter(matches) : [];
        const byName = q.get('fields')?.includes('name') && matches(o.name);
        if (!custom.length && !byName) return [];
        return [
          {
            result_score: 0.5,
            item: { id: o.id, type: 'organization', name: o.name, address: null, visible_to: 3, owner: { id: 1 }, custom_fields: custom, notes: [] },
          },
        ];
      });
      return HttpResponse.json({ success: true, data: { items }, additional_data: { next_cursor: null } });
    }),
    mswHttp.post(`${base}/api/v2/organizations`, async ({ request }) => {
      const body = await record(request);
      const denied = unauthorized(request);
      if (denied) return denied;
      const org = { id: nextId++, name: body.name as string, custom_fields: (body.custom_fields ?? {}) as Record<string, string> };
      orgs.push(org);
      return HttpResponse.json({ success: true, data: { ...org, add_time: '2026-11-27T10:15:01Z' } });
    }),
    mswHttp.get(`${base}/v1/notes`, async ({ request }) => {
      await record(request);
      const denied = unauthorized(request);
      if (denied) return denied;
      const q = new URL(request.url).searchParams;
      const list = notes
        .filter((n) => n.org_id === Number(q.get('org_id')))
        .sort((a, b) => b.add_time - a.add_time)
        .slice(Number(q.get('start') ?? 0), Number(q.get('start') ?? 0) + Number(q.get('limit') ?? 100));
      return HttpResponse.json({
        success: true,
        data: list.length ? list : null,
        additional_data: { pagination: { start: 0, limit: 100, more_items_in_collection: false } },
      });
    }),
    mswHttp.post(`${base}/v1/notes`, async ({ request }) => {
      const body = await record(request);
      const denied = unauthorized(request);
      if (denied) return denied;
      const note = { id: nextId++, org_id: body.org_id as number, content: body.content as string, add_time: clock++ };
      notes.push(note);
      return HttpResponse.json({ success: true, data: note });
    }),
  ];
  return { orgs, notes, seen, handlers };
}

describe('Pipedrive push', () => {
  let pd: ReturnType<typeof fakePipedrive>;
  beforeEach(() => {
    pd = fakePipedrive();
    msw.use(...pd.handlers);
  });
  const deps = () => ({ send, token: PIPEDRIVE_TOKEN });

  it('searches the organization by website, then name, adds it, then a note on it; the token only in x-api-token', async () => {
    const outcome = await pushToPipedrive(deps(), signal(), { idempotencyKey: 'evt-1' });
    expect(pd.orgs).toEqual([{ id: 300, name: 'Acme Inc', custom_fields: {} }]);
    expect(outcome).toEqual({ ok: true, externalId: '300' });
    expect(pd.seen.map((s) => `${s.method} ${s.path}`)).toEqual([
      'GET /api/v2/organizations/search?term=acme.com&fields=custom_fields&limit=20',
      'GET /api/v2/organizations/search?term=Acme+Inc&fields=name&exact_match=true&limit=1',
      'POST /api/v2/organizations',
      'GET /v1/notes?org_id=300&start=0&limit=100&sort=add_time+DESC',
      'POST /v1/notes',
    ]);
    for (const s of pd.seen) {
      expect(s.auth).toBe(PIPEDRIVE_TOKEN);
      expect(s.apiToken).toBeNull();
      expect(s.path).not.toContain(PIPEDRIVE_TOKEN);
    }
    expect(pd.notes).toHaveLength(1);
    expect(pd.notes[0]?.org_id).toBe(300);
    for (const part of ['High-intent visit on shop.example', 'Acme Inc (acme.com)', '3m 20s', 'Enterprise SaaS: 87/100', '<li>/docs/api</li>']) {
      expect(pd.notes[0]?.content).toContain(part);
    }
  });

  it('finds the organization whose website field names the domain, whatever its name', async () => {
    pd.orgs.push({ id: 7, name: 'ACME Holding', custom_fields: { '9dc80c50d78a15643bfc4ca79d76156a73a1ca0e': 'https://www.acme.com/' } });
    // A longer domain that merely contains the term is not the company.
    pd.orgs.push({ id: 8, name: 'Acme Australia', custom_fields: { '9dc80c50d78a15643bfc4ca79d76156a73a1ca0e': 'acme.com.au' } });
    expect(await pushToPipedrive(deps(), signal(), { idempotencyKey: 'evt-1' })).toEqual({ ok: true, externalId: '7' });
    expect(pd.orgs).toHaveLength(2);
    expect(pd.notes.map((n) => n.org_id)).toEqual([7]);
  });

  it('an organization added with the account’s website field is found by it next time', async () => {
    const key = '9dc80c50d78a15643bfc4ca79d76156a73a1ca0e';
    await pushToPipedrive({ ...deps(), websiteFieldKey: key }, signal(), { idempotencyKey: 'evt-1' });
    expect(pd.orgs[0]?.custom_fields).toEqual({ [key]: 'acme.com' });
    pd.seen.length = 0;
    expect(await pushToPipedrive(deps(), signal({}, { company_name: 'Acme Renamed' }), { idempotencyKey: 'evt-2' })).toEqual({
      ok: true,
      externalId: '300',
    });
    expect(pd.orgs).toHaveLength(1);
    expect(pd.seen.filter((s) => s.path.includes('fields=name'))).toHaveLength(0);
  });

  it('a retry after a success adds neither a second organization nor a second note', async () => {
    const first = await pushToPipedrive(deps(), signal(), { idempotencyKey: 'evt-1' });
    pd.seen.length = 0;
    expect(await pushToPipedrive(deps(), signal(), { idempotencyKey: 'evt-1' })).toEqual(first);
    expect(pd.orgs).toHaveLength(1);
    expect(pd.notes).toHaveLength(1);
    expect(pd.seen.every((s) => s.method === 'GET')).toBe(true);
  });

  it('a retry after a timeout whose note did land adds no second note', async () => {
    msw.use(
      mswHttp.post(`${PIPEDRIVE}/v1/notes`, async ({ request }) => {
        const body = (await request.json()) as { org_id: number; content: string };
        pd.notes.push({ id: 999, org_id: body.org_id, content: body.content, add_time: 100 });
        await delay(2_000);
        return HttpResponse.json({ success: true, data: { id: 999 } });
      }),
    );
    expect(await pushToPipedrive({ ...deps(), timeoutMs: 150 }, signal(), { idempotencyKey: 'evt-1' })).toMatchObject({ ok: false, retryable: true });
    msw.resetHandlers(...pd.handlers);
    expect(await pushToPipedrive(deps(), signal(), { idempotencyKey: 'evt-1' })).toEqual({ ok: true, externalId: '300' });
    expect(pd.notes).toHaveLength(1);
    expect(pd.orgs).toHaveLength(1);
  });

  it('429 is retried after Retry-After, else after x-ratelimit-reset', async () => {
    const limited = (headers: Record<string, string>) =>
      mswHttp.get(`${PIPEDRIVE}/api/v2/organizations/search`, () =>
        HttpResponse.json({ success: false, error: 'Rate limit has been exceeded', errorCode: 429 }, { status: 429, headers }),
      );
    msw.use(limited({ 'Retry-After': '3', 'x-ratelimit-reset': '2' }));
    expect(await pushToPipedrive(deps(), signal(), { idempotencyKey: 'evt-1' })).toEqual({
      ok: false,
      retryable: true,
      retryAfterMs: 3_000,
      status: 429,
      error: 'Pipedrive answered HTTP 429: Rate limit has been exceeded',
    });
    msw.use(limited({ 'x-ratelimit-limit': '40', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '2' }));
    expect(await pushToPipedrive(deps(), signal(), { idempotencyKey: 'evt-1' })).toMatchObject({ retryable: true, retryAfterMs: 2_000 });
    expect(pd.orgs).toHaveLength(0);
  });

  it('401 is permanent and the error never holds the token, even when Pipedrive quotes it', async () => {
    const wrong = 'deadbeefdeadbeefdeadbeefdeadbeefdeadbeef';
    const f = failure(await pushToPipedrive({ send, token: wrong }, signal(), { idempotencyKey: 'evt-1' }));
    expect(f).toMatchObject({ retryable: false, status: 401 });
    expect(f.error).toContain('Pipedrive answered HTTP 401: unauthorized access for token');
    expect(f.error).not.toContain(wrong);
  });

  it('5xx is retried; a 402 (plan) is permanent', async () => {
    msw.use(mswHttp.post(`${PIPEDRIVE}/v1/notes`, () => HttpResponse.json({ success: false, error: 'Service unavailable' }, { status: 503 })));
    expect(await pushToPipedrive(deps(), signal(), { idempotencyKey: 'evt-1' })).toMatchObject({ ok: false, retryable: true, status: 503 });
    msw.use(
      mswHttp.post(`${PIPEDRIVE}/api/v2/organizations`, () => HttpResponse.json({ success: false, error: 'Payment required' }, { status: 402 })),
    );
    expect(await pushToPipedrive(deps(), signal({}, { company_name: 'Globex', domain: 'globex.io' }), { idempotencyKey: 'evt-2' })).toMatchObject({
      ok: false,
      retryable: false,
      status: 402,
    });
  });

  it('talks to the company’s own Pipedrive domain when given one', async () => {
    const own = fakePipedrive('https://acme-sales.pipedrive.com');
    msw.use(...own.handlers);
    expect(await pushToPipedrive({ ...deps(), baseUrl: 'https://acme-sales.pipedrive.com/' }, signal(), { idempotencyKey: 'evt-1' })).toMatchObject({
      ok: true,
    });
    expect(own.orgs).toHaveLength(1);
    expect(pd.orgs).toHaveLength(0);
  });
});
