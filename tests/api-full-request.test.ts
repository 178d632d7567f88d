import {
  type AiEngine,
  AppError,
  builtinEngine,
  CALLER_MESSAGING_STRATEGY,
  FULL_REQUEST_OPERATION,
  FULL_REQUEST_TIMINGS,
  MESSAGE_PRICES,
  MessageMetadata,
  MessageProcessing,
  type ProfileResearch,
  type ProspectProfile,
  ResearchSummary,
  requestFullMessage,
  researchFromCallerText,
  urlOnlyResearch,
  workIcpQueue,
} from '@sightline/core';
import { holdCredits, releaseExpiredCreditHolds } from '@sightline/core/messaging/credit-holds';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { MessageResultResponse, NotEnoughCredits } from '../functions/api-full-request/route.ts';
import { type FakeEngine, type FakeEngineOptions, fakeAiEngine } from './support/ai.ts';
import { createTestEnv, fn, type Json, type TestEnv } from './support/app.ts';
import { seedDirectAccount } from './support/seed.ts';
import { seedConnectedUser, userHeaders } from './support/users.ts';

/**
 * api-full-request: one call researches a prospect and writes them a message for a connected user.
 * The stories: the response is the spec's message result with counts we compute; research and
 * message are debited per operation in the transaction that stores the message; a request the
 * balance cannot pay for, or a provider that fails, charges nothing and calls (or leaves) nobody;
 * one x-idempotency-key gives one message and one charge, answered byte for byte on every repeat.
 *
 * The research provider and the AI engine are fakes injected into the deps (we own no third party
 * here), except one story told with the real built-in engine and the url-only provider, offline.
 */

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv({ pool: 20 });
});
afterAll(() => env.close());

// ---------------------------------------------------------------------------------------------
// Fakes
// ---------------------------------------------------------------------------------------------

/** A promise with its resolver, to hold a fake at a point the test chooses. */
function deferred<T = void>() {
  let resolve: (v: T) => void = () => undefined;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const PROFILE: Omit<ProspectProfile, 'linkedin_url'> = {
  full_name: 'Jane Doe',
  headline: 'VP Sales at Acme',
  job_title: 'VP Sales',
  company: 'Acme',
  industry: 'Software Development',
  location: 'London',
  summary: null,
  experience: [],
  skills: ['SaaS'],
  source: 'fake-research',
};

const SUMMARY: ResearchSummary = {
  recommended_focus: 'Their pipeline at Acme',
  prospect_insights: ['VP Sales at Acme', 'Based in London'],
  messaging_strategy: 'Lead with pipeline quality',
  product_alignment: 'Fits their outbound work',
  should_send_message: true,
};

/** Words 15, code points 71 (UTF-16 units 72: the emoji is two). */
const MESSAGE = 'Hi Jane \u{1F44B},\n\nloved your talk on caf\u00e9 culture \u2014 shall we connect?  \u00c7a va?';

/** The fake engine, answering this file's summary and message unless a test says otherwise. */
const fakeEngine = (opts: FakeEngineOptions = {}): FakeEngine => fakeAiEngine({ summary: SUMMARY, message: MESSAGE, ...opts });

interface FakeResearch extends ProfileResearch {
  lookups: string[];
  signals: AbortSignal[];
}

function fakeResearch(opts: { answer?: 'profile' | 'null' | 'fail' | 'hang' } = {}): FakeResearch {
  const lookups: string[] = [];
  const signals: AbortSignal[] = [];
  return {
    name: 'fake-research',
    lookups,
    signals,
    async lookup(url, signal) {
      lookups.push(url);
      signals.push(signal);
      switch (opts.answer ?? 'profile') {
        case 'null':
          return null;
        case 'fail':
          throw new Error('fake-research answered HTTP 503');
        case 'hang':
          // A provider that ignores its signal: the step's own clock must end the wait.
          return new Promise<never>(() => undefined);
        default:
          return { ...PROFILE, linkedin_url: url };
      }
    },
  };
}

let ai: FakeEngine;
let research: FakeResearch;
let defaults: { ai: AiEngine; research: ProfileResearch };
beforeAll(() => {
  defaults = { ai: env.deps.ai, research: env.deps.research };
});
beforeEach(() => {
  ai = fakeEngine();
  research = fakeResearch();
  env.deps.ai = ai;
  env.deps.research = research;
});
afterEach(() => {
  env.deps.ai = defaults.ai;
  env.deps.research = defaults.research;
});

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

interface Sender {
  account_id: string;
  key: string;
  user_id: string;
}

async function sender(credits = 100): Promise<Sender> {
  const account = await seedDirectAccount(env.deps, 'Messaging');
  if (credits > 0) await env.db`select sl_grant_credits(${account.account_id}, ${credits})`;
  const user = await seedConnectedUser(env.db, account.account_id, { name: 'Sam Sender', title: 'Founder', company: 'Sightline Test Ltd' });
  return { account_id: account.account_id, key: account.key, user_id: user.user_id };
}

const PROSPECT = 'https://www.linkedin.com/in/jane-doe-4a1b2c';

/** A request as the client sends it; the raw text kept, since a repeat must answer the same bytes. */
async function post(s: Sender, body: unknown, idem: string = crypto.randomUUID(), user: string = s.user_id) {
  const res = await env.app.request(fn('api-full-request'), {
    method: 'POST',
    headers: { 'x-access-key': s.key, 'content-type': 'application/json', ...userHeaders(user, idem) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: JSON.parse(text) as Json, idem, contentType: res.headers.get('content-type') };
}

async function ledger(accountId: string) {
  const [a] = await env.db<{ balance: number }>`select credit_balance as balance from accounts where id = ${accountId}`;
  const debits = await env.db<{ operation: string; amount: number; user_id: string | null; reference_id: string | null }>`
    select operation, amount, user_id::text, reference_id::text from credit_transactions
    where account_id = ${accountId} and type = 'debit' order by operation`;
  const messages = await env.db<{ id: string; prospect_url: string; research_source: string; credits_charged: number; engine: string }>`
    select id::text, prospect_url, research_source, credits_charged, engine from messages where account_id = ${accountId}`;
  const keys = await env.db<{ idempotency_key: string; state: string }>`
    select idempotency_key::text, state from idempotent_requests where account_id = ${accountId}`;
  const events = await env.db<{
    event: string;
  }>`select event from events where partner_account_id = ${accountId} and destination = 'account' order by seq`;
  return { balance: a?.balance ?? 0, debits, messages, keys, events: events.map((e) => e.event) };
}

async function createProduct(accountId: string, name = 'Pipeline Pro') {
  const [row] = await env.db<{ id: string }>`
    insert into products (account_id, name, description, value_propositions, target_customers)
    values (${accountId}, ${name}, 'Finds the buyers already on your website.', array['More qualified pipeline'], array['B2B sales teams'])
    returning id::text`;
  if (!row) throw new Error('no product');
  return row.id;
}

const expectNoProviderCall = () => {
  expect(research.lookups).toHaveLength(0);
  expect(ai.summarised).toHaveLength(0);
  expect(ai.written).toHaveLength(0);
};

// ---------------------------------------------------------------------------------------------
// The message result
// ---------------------------------------------------------------------------------------------

describe('api-full-request: the message result', () => {
  it('answers exactly the spec’s message result, with word and character counts computed from the message', async () => {
    const s = await sender();
    const res = await post(s, { prospect_url: 'https://linkedin.com/in/Jane-Doe-4a1b2c/' });
    expect(res.status, res.text).toBe(200);
    expect(res.contentType).toMatch(/^application\/json/);
    const body = MessageResultResponse.strict().parse(res.json);
    ResearchSummary.strict().parse(body.research_summary);
    MessageMetadata.strict().parse(body.message_metadata);
    expect(body).toEqual({
      success: true,
      status: 'completed',
      message_id: expect.any(String),
      generated_message: MESSAGE,
      research_summary: SUMMARY,
      message_metadata: { message_type: 'connection_request', word_count: 15, character_count: 71 },
      credits_charged: MESSAGE_PRICES.research + MESSAGE_PRICES.message,
      generated_by: 'fake-engine',
    });
    // Code points, not UTF-16 units: the emoji counts once.
    expect(MESSAGE.length).toBe(72);

    // The provider was asked about the canonical URL; the engine was given the profile, the summary and the sender.
    expect(research.lookups).toEqual([PROSPECT]);
    expect(ai.written[0]).toMatchObject({
      research: SUMMARY,
      product: null,
      template: {},
      sender: { name: 'Sam Sender', title: 'Founder', company: 'Sightline Test Ltd' },
      additionalResearch: null,
    });
    expect(ai.written[0]?.profile.full_name).toBe('Jane Doe');
  });

  it('debits research and message as two operations, tied to the message and the user, and stores the message once', async () => {
    const s = await sender(100);
    const res = await post(s, { prospect_url: PROSPECT, additional_research: '  Spoke at SaaStr.  ' });
    expect(res.status, res.text).toBe(200);
    const id = res.json.message_id as string;
    const l = await ledger(s.account_id);
    expect(l.balance).toBe(95);
    expect(l.debits).toEqual([
      { operation: 'message', amount: 2, user_id: s.user_id, reference_id: id },
      { operation: 'research', amount: 3, user_id: s.user_id, reference_id: id },
    ]);
    expect(l.messages).toEqual([{ id, prospect_url: PROSPECT, research_source: 'fake-research', credits_charged: 5, engine: 'fake-engine' }]);
    expect(l.keys).toEqual([{ idempotency_key: res.idem, state: 'completed' }]);
    expect(l.events).toEqual(['message.completed']);
    expect(ai.summarised[0]?.additionalResearch).toBe('Spoke at SaaStr.');
    const usage = await env.db<{ operation: string; calls: string }>`
      select operation, sum(calls)::text as calls from usage_daily
      where account_id = ${s.account_id} and operation in ('research', 'message') group by 1 order by 1`;
    expect(usage).toEqual([
      { operation: 'message', calls: '1' },
      { operation: 'research', calls: '1' },
    ]);
  });

  it('counts words as runs of non-whitespace and characters as code points (a combining accent is its own)', async () => {
    ai = fakeEngine({ message: '  Cafe\u0301 \u2615\uFE0F\u00a0ok \n' });
    env.deps.ai = ai;
    const s = await sender();
    const res = await post(s, { prospect_url: PROSPECT, template: { message_type: 'inmail', tone: 'friendly' } });
    expect(res.status, res.text).toBe(200);
    // Surrounding whitespace is trimmed before counting and storing.
    expect(res.json.generated_message).toBe('Cafe\u0301 \u2615\uFE0F\u00a0ok');
    expect(res.json.message_metadata).toEqual({ message_type: 'inmail', word_count: 3, character_count: 11 });
    expect(ai.written[0]?.template).toEqual({ message_type: 'inmail', tone: 'friendly' });
  });

  it('a provider that knows nothing of the profile is not a failure: the research is written from the URL alone', async () => {
    research = fakeResearch({ answer: 'null' });
    env.deps.research = research;
    const s = await sender();
    const res = await post(s, { prospect_url: PROSPECT });
    expect(res.status, res.text).toBe(200);
    expect(ai.summarised[0]?.profile).toMatchObject({ linkedin_url: PROSPECT, full_name: 'Jane Doe', job_title: null, source: 'url-only' });
    expect((await ledger(s.account_id)).messages[0]?.research_source).toBe('url-only');
  });

  it('works offline with the built-in engine and the url-only provider', async () => {
    env.deps.ai = builtinEngine;
    env.deps.research = urlOnlyResearch;
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    try {
      const s = await sender();
      const productId = await createProduct(s.account_id);
      const res = await post(s, { prospect_url: PROSPECT, product_id: productId, template: { length: 'short' } });
      expect(res.status, res.text).toBe(200);
      const body = MessageResultResponse.strict().parse(res.json);
      expect(body.generated_by).toBe('builtin');
      const text = body.generated_message;
      expect(body.message_metadata).toEqual({
        message_type: 'connection_request',
        word_count: text.split(/\s+/).filter(Boolean).length,
        character_count: Array.from(text).length,
      });
      expect(body.message_metadata.character_count).toBeLessThanOrEqual(300);
      expect((await ledger(s.account_id)).messages[0]?.research_source).toBe('url-only');
      expect(fetchSpy).not.toHaveBeenCalled();
    } finally {
      fetchSpy.mockRestore();
    }
  });

  it('with the built-in engine, research it must shorten is cut between characters, never through an emoji (a 200, not a 502)', async () => {
    // Found by the fuzz suite: an insight clipped at 1,000 code units ended on half of an emoji,
    // text that cannot be stored, and the engine's own answer failed the request.
    env.deps.ai = builtinEngine;
    env.deps.research = urlOnlyResearch;
    const s = await sender();
    for (const additional of ['😀'.repeat(1_500), `a${'😀'.repeat(1_500)}`]) {
      const res = await post(s, { prospect_url: PROSPECT, additional_research: additional });
      expect(res.status, res.text).toBe(200);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Research given by the caller, and products
// ---------------------------------------------------------------------------------------------

describe('api-full-request: research_summary and product_id', () => {
  const GIVEN = '- Jane runs a 40-person sales team at Acme.\n- She posted about Pipeline Pro last week.\n* Prefers short notes.';

  it('skips the research step and its charge, and shapes the given text as the research_summary object', async () => {
    const s = await sender(100);
    const productId = await createProduct(s.account_id);
    const res = await post(s, { prospect_url: PROSPECT, research_summary: GIVEN, product_id: productId });
    expect(res.status, res.text).toBe(200);
    expect(research.lookups).toHaveLength(0);
    expect(ai.summarised).toHaveLength(0);
    expect(res.json.research_summary).toEqual({
      recommended_focus: 'Jane runs a 40-person sales team at Acme.',
      prospect_insights: ['Jane runs a 40-person sales team at Acme.', 'She posted about Pipeline Pro last week.', 'Prefers short notes.'],
      messaging_strategy: CALLER_MESSAGING_STRATEGY,
      product_alignment: 'She posted about Pipeline Pro last week.',
      should_send_message: true,
    });
    expect(res.json.credits_charged).toBe(MESSAGE_PRICES.message);
    // The engine writes from the caller's own words, not from our reshaping of them.
    expect(ai.written[0]?.research).toBe(GIVEN);
    expect(ai.written[0]?.product?.name).toBe('Pipeline Pro');
    expect(ai.written[0]?.profile).toMatchObject({ linkedin_url: PROSPECT, source: 'caller' });
    const l = await ledger(s.account_id);
    expect(l.debits.map((d) => [d.operation, d.amount])).toEqual([['message', 2]]);
    expect(l.balance).toBe(98);
    expect(l.messages[0]?.research_source).toBe('caller');
  });

  it('splits one paragraph into its sentences, and says when the research does not name the product', () => {
    const summary = researchFromCallerText('Leads sales at Acme. Hiring SDRs!  Cares about data quality?', {
      name: 'Pipeline Pro',
      url: null,
      description: null,
      value_propositions: [],
      target_customers: [],
    });
    expect(summary.prospect_insights).toEqual(['Leads sales at Acme.', 'Hiring SDRs!', 'Cares about data quality?']);
    expect(summary.product_alignment).toBe('The supplied research does not mention Pipeline Pro.');
    expect(researchFromCallerText('One point', null).product_alignment).toBe('No product was referenced in this request.');
  });

  it('is paid for by the message price alone, so it goes through on a balance of exactly that', async () => {
    const s = await sender(MESSAGE_PRICES.message);
    const res = await post(s, { prospect_url: PROSPECT, research_summary: 'Leads sales at Acme.' });
    expect(res.status, res.text).toBe(200);
    expect((await ledger(s.account_id)).balance).toBe(0);
  });

  it('refuses another account’s product with 403 and an unknown one with 404, before any provider call, and gives the key back', async () => {
    const s = await sender();
    const other = await sender();
    const theirs = await createProduct(other.account_id, 'Their Product');
    const idem = crypto.randomUUID();
    const refused = await post(s, { prospect_url: PROSPECT, product_id: theirs }, idem);
    expect(refused.status).toBe(403);
    expect(refused.json).toEqual({ success: false, error: 'product_id: the product belongs to another account', code: 'forbidden' });
    const unknown = await post(s, { prospect_url: PROSPECT, product_id: crypto.randomUUID() });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatch(/^product_id: no product /);
    expectNoProviderCall();
    expect(await ledger(s.account_id)).toMatchObject({ balance: 100, debits: [], messages: [], keys: [] });
    // The key was given back: the corrected request may use it.
    const mine = await createProduct(s.account_id);
    const fixed = await post(s, { prospect_url: PROSPECT, product_id: mine }, idem);
    expect(fixed.status, fixed.text).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------
// Refusals that change nothing
// ---------------------------------------------------------------------------------------------

describe('api-full-request: refused before any work', () => {
  it('402 before any provider call when the balance does not cover research and message; nothing charged, key given back', async () => {
    const s = await sender(MESSAGE_PRICES.research + MESSAGE_PRICES.message - 1);
    const idem = crypto.randomUUID();
    const res = await post(s, { prospect_url: PROSPECT }, idem);
    expect(res.status).toBe(402);
    const body = NotEnoughCredits.strict().parse(res.json);
    expect(body).toEqual({
      success: false,
      error: 'not enough credits: this request needs 5 (research 3 + message 2), the account has 4',
      code: 'insufficient_credits',
      credits_required: 5,
      credit_balance: 4,
    });
    expectNoProviderCall();
    expect(await ledger(s.account_id)).toEqual({ balance: 4, debits: [], messages: [], keys: [], events: [] });
    await env.db`select sl_grant_credits(${s.account_id}, 1)`;
    expect((await post(s, { prospect_url: PROSPECT }, idem)).status).toBe(200);
  });

  it('402 names the message price alone when the research was given', async () => {
    const s = await sender(MESSAGE_PRICES.message - 1);
    const res = await post(s, { prospect_url: PROSPECT, research_summary: 'Leads sales at Acme.' });
    expect(res.status).toBe(402);
    expect(res.json).toEqual({
      success: false,
      error: 'not enough credits: this request needs 2 (message 2; research was given), the account has 1',
      code: 'insufficient_credits',
      credits_required: 2,
      credit_balance: 1,
    });
    expectNoProviderCall();
  });

  it('403 for an x-user-id that is not connected to the account, before any provider call', async () => {
    const s = await sender();
    const other = await sender();
    for (const user of [crypto.randomUUID(), other.user_id]) {
      const res = await post(s, { prospect_url: PROSPECT }, crypto.randomUUID(), user);
      expect(res.status).toBe(403);
      expect(res.json.error).toMatch(/x-user-id is not a user connected to this account/);
    }
    await env.db`update connected_users set status = 'disconnected' where id = ${s.user_id}`;
    expect((await post(s, { prospect_url: PROSPECT })).status).toBe(403);
    expectNoProviderCall();
    expect(await ledger(s.account_id)).toMatchObject({ balance: 100, debits: [], messages: [], keys: [] });
  });

  it.each([
    ['http://www.linkedin.com/in/jane-doe', 'prospect_url: must use https:, not http:'],
    ['https://www.linkedin.com/company/acme', 'prospect_url: company pages (/company/...) are not personal profiles'],
    [
      'https://www.linkedin.com/in/jane-doe/detail/recent-activity',
      'prospect_url: sub-paths of a profile (such as /detail/recent-activity) are not accepted; send the profile’s own /in/<slug> address',
    ],
    ['https://www.linkedin.com/in/jane-doe?trk=x', 'prospect_url: must not have a query string (remove the ? and everything after it)'],
    ['https://uk.linkedin.com/in/jane-doe', 'prospect_url: host must be linkedin.com or www.linkedin.com, not "uk.linkedin.com"'],
    ['https://www.linkedin.com/posts/jane-doe_x', 'prospect_url: posts (/posts/...) are not personal profiles'],
  ])('400 for prospect_url %s, naming the rule', async (url, error) => {
    const s = await sender();
    const res = await post(s, { prospect_url: url });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ success: false, error, code: 'invalid_request' });
    expectNoProviderCall();
    expect(await ledger(s.account_id)).toMatchObject({ balance: 100, keys: [] });
  });

  it.each([
    ['no prospect_url', {}, 'prospect_url is required'],
    [
      'additional_research too long',
      { prospect_url: PROSPECT, additional_research: 'x'.repeat(4001) },
      'additional_research: must be at most 4000 characters',
    ],
    [
      'blank research_summary',
      { prospect_url: PROSPECT, research_summary: '   ' },
      'research_summary: must not be blank (leave it out to have the research done)',
    ],
    [
      'research_summary too long',
      { prospect_url: PROSPECT, research_summary: 'x'.repeat(20_001) },
      'research_summary: must be at most 20000 characters',
    ],
    ['product_id not a uuid', { prospect_url: PROSPECT, product_id: 'nope' }, 'product_id: must be a uuid'],
    ['an unknown tone', { prospect_url: PROSPECT, template: { tone: 'rude' } }, 'template.tone:'],
    ['an unknown template field', { prospect_url: PROSPECT, template: { emoji: true } }, 'template: unknown field(s): "emoji"'],
    ['an unknown field', { prospect_url: PROSPECT, extra: 1 }, 'unknown field(s): "extra"'],
  ])('400 for %s', async (_what, body, error) => {
    const s = await sender();
    const res = await post(s, body);
    expect(res.status).toBe(400);
    expect(String(res.json.error)).toContain(error);
    expectNoProviderCall();
  });
});

// ---------------------------------------------------------------------------------------------
// Provider and engine failures
// ---------------------------------------------------------------------------------------------

describe('api-full-request: a failing provider or engine charges nothing', () => {
  it.each([
    [
      'the research provider',
      () => ({ research: fakeResearch({ answer: 'fail' }), ai: fakeEngine() }),
      /^research step failed: the profile research provider \(fake-research\) did not answer \(fake-research answered HTTP 503\)/,
    ],
    [
      'the research summary',
      () => ({ research: fakeResearch(), ai: fakeEngine({ failSummary: true }) }),
      /^research step failed: the AI engine \(fake-engine\) could not summarise the research/,
    ],
    [
      'the message',
      () => ({ research: fakeResearch(), ai: fakeEngine({ failMessage: true }) }),
      /^message step failed: the AI engine \(fake-engine\) could not write the message \(message model refused\)/,
    ],
    [
      'an empty message',
      () => ({ research: fakeResearch(), ai: fakeEngine({ message: ' \n ' }) }),
      /^message step failed: .*does not have the expected shape/,
    ],
    [
      'a message Postgres cannot store',
      () => ({ research: fakeResearch(), ai: fakeEngine({ message: 'Hi\u0000there' }) }),
      /^message step failed: .*cannot be stored/,
    ],
  ])('502 naming the step when %s fails; the key may be used again', async (_what, make, error) => {
    const failing = make();
    env.deps.research = failing.research;
    env.deps.ai = failing.ai;
    const s = await sender();
    const idem = crypto.randomUUID();
    const res = await post(s, { prospect_url: PROSPECT }, idem);
    expect(res.status, res.text).toBe(502);
    expect(res.json).toMatchObject({ success: false, code: 'upstream_failed' });
    expect(String(res.json.error)).toMatch(error);
    expect(String(res.json.error)).toMatch(/nothing was charged, and the request may be repeated with the same x-idempotency-key$/);
    expect(await ledger(s.account_id)).toEqual({ balance: 100, debits: [], messages: [], keys: [], events: [] });
    env.deps.research = research;
    env.deps.ai = ai;
    const again = await post(s, { prospect_url: PROSPECT }, idem);
    expect(again.status, again.text).toBe(200);
  });

  it('gives up on a research provider that does not answer in time, aborting its signal', async () => {
    research = fakeResearch({ answer: 'hang' });
    env.deps.research = research;
    const s = await sender();
    const idem = crypto.randomUUID();
    const attempt = requestFullMessage({
      ctx: env.deps,
      input: { accountId: s.account_id, userId: s.user_id, idempotencyKey: idem, request: { prospect_url: PROSPECT }, researchTimeoutMs: 50 },
    });
    await expect(attempt).rejects.toBeInstanceOf(AppError);
    await expect(attempt).rejects.toMatchObject({ status: 502, message: expect.stringMatching(/^research step failed: .*no answer within 0\.1 s/) });
    expect(research.signals[0]?.aborted).toBe(true);
    expect(ai.written).toHaveLength(0);
    expect(await ledger(s.account_id)).toMatchObject({ balance: 100, debits: [], keys: [] });
  });
});

// ---------------------------------------------------------------------------------------------
// Idempotency
// ---------------------------------------------------------------------------------------------

describe('api-full-request: one key, one message, one charge', () => {
  it('a repeat after completion answers the identical bytes and makes no second message or charge', async () => {
    const s = await sender();
    const first = await post(s, { prospect_url: PROSPECT, template: { tone: 'direct' } });
    expect(first.status).toBe(200);
    // The same request spelt differently (key order, host, trailing slash) is the same request.
    const repeat = await post(s, { template: { tone: 'direct' }, prospect_url: 'https://linkedin.com/in/jane-doe-4a1b2c/' }, first.idem);
    expect(repeat.status).toBe(200);
    expect(repeat.text).toBe(first.text);
    expect(ai.written).toHaveLength(1);
    expect(research.lookups).toHaveLength(1);
    const l = await ledger(s.account_id);
    expect(l.messages).toHaveLength(1);
    expect(l.debits).toHaveLength(2);
    expect(l.balance).toBe(95);
  });

  it('a key whose stored outcome was purged is refused (422) before any provider is called, never a second message', async () => {
    const s = await sender();
    const first = await post(s, { prospect_url: PROSPECT });
    expect(first.status).toBe(200);
    await env.db`delete from idempotent_requests where account_id = ${s.account_id}`;
    const again = await post(s, { prospect_url: PROSPECT }, first.idem);
    expect(again.status).toBe(422);
    expect(String(again.json.error)).toMatch(/whose stored result has expired; use a new key/);
    expect(ai.written).toHaveLength(1);
    expect(research.lookups).toHaveLength(1);
    const l = await ledger(s.account_id);
    expect(l.messages).toHaveLength(1);
    expect(l.debits).toHaveLength(2);
    // Refused and given back: nothing is left holding the key.
    expect(await env.db`select 1 from idempotent_requests where account_id = ${s.account_id}`).toHaveLength(0);
  });

  it('the same key with a different body is a 422 and changes nothing', async () => {
    const s = await sender();
    const first = await post(s, { prospect_url: PROSPECT });
    const other = await post(s, { prospect_url: 'https://www.linkedin.com/in/someone-else' }, first.idem);
    expect(other.status).toBe(422);
    expect(other.json).toEqual({
      success: false,
      error: 'x-idempotency-key was already used for a different request; use a new key for a new request',
      code: 'idempotency_key_reused',
    });
    // And for a different connected user of the same account.
    const colleague = await seedConnectedUser(env.db, s.account_id);
    expect((await post(s, { prospect_url: PROSPECT }, first.idem, colleague.user_id)).status).toBe(422);
    expect(ai.written).toHaveLength(1);
    expect((await ledger(s.account_id)).debits).toHaveLength(2);
  });

  it('answers 202 processing to a repeat while the first is working, then the first’s result', async () => {
    const gate = deferred();
    const entered = deferred();
    ai = fakeEngine({ gate: gate.promise, onWrite: () => entered.resolve() });
    env.deps.ai = ai;
    const s = await sender();
    const idem = crypto.randomUUID();
    const first = post(s, { prospect_url: PROSPECT }, idem);
    await entered.promise;
    const meanwhile = await post(s, { prospect_url: PROSPECT }, idem);
    expect(meanwhile.status).toBe(202);
    expect(MessageProcessing.strict().parse(meanwhile.json)).toEqual({
      success: true,
      status: 'processing',
      message: expect.stringMatching(/same x-idempotency-key/),
    });
    expect((await ledger(s.account_id)).debits).toHaveLength(0);
    gate.resolve();
    const done = await first;
    expect(done.status).toBe(200);
    const after = await post(s, { prospect_url: PROSPECT }, idem);
    expect(after.status).toBe(200);
    expect(after.text).toBe(done.text);
    expect(ai.written).toHaveLength(1);
    expect((await ledger(s.account_id)).messages).toHaveLength(1);
  });

  it('past the wait bound answers 202 and finishes in the background; a repeat then gets the result', async () => {
    const gate = deferred();
    ai = fakeEngine({ gate: gate.promise });
    env.deps.ai = ai;
    const s = await sender();
    const idem = crypto.randomUUID();
    const outcome = await requestFullMessage({
      ctx: env.deps,
      input: { accountId: s.account_id, userId: s.user_id, idempotencyKey: idem, request: { prospect_url: PROSPECT }, waitMs: 20 },
    });
    expect(outcome.status).toBe(202);
    expect((await post(s, { prospect_url: PROSPECT }, idem)).status).toBe(202);
    gate.resolve();
    await env.settle();
    const l = await ledger(s.account_id);
    expect(l.messages).toHaveLength(1);
    expect(l.keys).toEqual([{ idempotency_key: idem, state: 'completed' }]);
    const repeat = await post(s, { prospect_url: PROSPECT }, idem);
    expect(repeat.status).toBe(200);
    expect(repeat.json.message_id).toBe(l.messages[0]?.id);
    MessageResultResponse.strict().parse(repeat.json);
  });

  it('work that fails in the background gives its key back and charges nothing', async () => {
    const gate = deferred();
    ai = fakeEngine({ gate: gate.promise, failMessage: true });
    env.deps.ai = ai;
    const s = await sender();
    const idem = crypto.randomUUID();
    const outcome = await requestFullMessage({
      ctx: env.deps,
      input: { accountId: s.account_id, userId: s.user_id, idempotencyKey: idem, request: { prospect_url: PROSPECT }, waitMs: 20 },
    });
    expect(outcome.status).toBe(202);
    gate.resolve();
    await env.settle();
    expect(await ledger(s.account_id)).toEqual({ balance: 100, debits: [], messages: [], keys: [], events: [] });
    env.deps.ai = fakeEngine();
    expect((await post(s, { prospect_url: PROSPECT }, idem)).status).toBe(200);
  });

  it('claims a credit reload when the debit takes the balance below the threshold', async () => {
    const s = await sender(12);
    await env.db`
      update accounts set auto_reload_enabled = true, auto_reload_threshold = 10, auto_reload_amount = 100,
        credit_price_pence = 2, payment_method_id = 'pm_card_test' where id = ${s.account_id}`;
    const res = await post(s, { prospect_url: PROSPECT });
    expect(res.status, res.text).toBe(200);
    await env.settle();
    const l = await ledger(s.account_id);
    expect(l.balance).toBe(12 - 5 + 100);
    expect(l.events).toEqual(['credits.low', 'message.completed', 'credits.reloaded']);
    const [reload] = await env.db<{
      n: number;
    }>`select count(*)::int as n from credit_transactions where account_id = ${s.account_id} and type = 'reload'`;
    expect(reload?.n).toBe(1);
  });

  it('the idempotency store names the operation, so a key of another endpoint is never replayed here', () => {
    expect(FULL_REQUEST_OPERATION).toBe('api-full-request');
  });
});

// ---------------------------------------------------------------------------------------------
// Races (real Postgres: parallel backends meeting on row locks)
// ---------------------------------------------------------------------------------------------

describe.skipIf(!process.env.DATABASE_URL)('api-full-request races on real Postgres', () => {
  it('N identical requests at once make one message and one set of debits; the others answer 202 or the same bytes', async () => {
    ai = fakeEngine({ gate: new Promise((r) => setTimeout(r, 150)) });
    env.deps.ai = ai;
    const s = await sender();
    const idem = crypto.randomUUID();
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(s, { prospect_url: PROSPECT }, idem)));
    const completed = answers.filter((a) => a.status === 200);
    expect(
      answers.every((a) => a.status === 200 || a.status === 202),
      answers.map((a) => a.status).join(),
    ).toBe(true);
    expect(completed.length).toBeGreaterThanOrEqual(1);
    expect(new Set(completed.map((a) => a.text)).size).toBe(1);
    const final = await post(s, { prospect_url: PROSPECT }, idem);
    expect(final.text).toBe(completed[0]?.text);
    const l = await ledger(s.account_id);
    expect(l.messages).toHaveLength(1);
    expect(l.debits.map((d) => d.operation)).toEqual(['message', 'research']);
    expect(l.balance).toBe(95);
    expect(ai.written).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------------
// Credits held before the engine is asked (both databases: the hold is one statement under the
// account's row lock, so its answer does not depend on how requests interleave)
// ---------------------------------------------------------------------------------------------

/**
 * Holds every engine call until `n` requests have each reached the engine or been answered without
 * it: no request finishes (and pays) before the others have passed whatever comes before the engine,
 * so every request that can reach the engine does.
 */
function meetingOf(n: number) {
  let arrived = 0;
  const everyone = deferred();
  return {
    arrive() {
      arrived += 1;
      if (arrived >= n) everyone.resolve();
    },
    everyone: everyone.promise,
  };
}

async function holdsOf(accountId: string) {
  return env.db<{ idempotency_key: string; amount: number }>`
    select idempotency_key::text, amount from credit_holds where account_id = ${accountId} order by created_at`;
}

describe('api-full-request: the cost is held before any provider or engine is called', () => {
  it('100 requests with their own keys on 5 credits: one reaches the engine and is paid for, 99 are 402 before it', async () => {
    const meeting = meetingOf(100);
    ai = fakeEngine({ summaryGate: meeting.everyone, onSummarise: meeting.arrive });
    env.deps.ai = ai;
    const s = await sender(MESSAGE_PRICES.research + MESSAGE_PRICES.message);
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        post(s, { prospect_url: `https://www.linkedin.com/in/prospect-${i}` }).then((answer) => {
          // Refused without reaching the engine (a request that reached it arrived there already).
          if (answer.status === 402) meeting.arrive();
          return answer;
        }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    const refused = answers.filter((a) => a.status === 402);
    expect(refused).toHaveLength(99);
    for (const r of refused) {
      expect(r.json).toEqual({
        success: false,
        error: 'not enough credits: this request needs 5 (research 3 + message 2), the account has 0',
        code: 'insufficient_credits',
        credits_required: 5,
        credit_balance: 0,
      });
    }
    // As many engine calls as messages the balance pays for: one of each step.
    expect(research.lookups).toHaveLength(1);
    expect(ai.summarised).toHaveLength(1);
    expect(ai.written).toHaveLength(1);
    const l = await ledger(s.account_id);
    expect(l.balance).toBe(0);
    expect(l.messages).toHaveLength(1);
    expect(l.debits.map((d) => [d.operation, d.amount])).toEqual([
      ['message', 2],
      ['research', 3],
    ]);
    expect(l.keys.map((k) => k.state)).toEqual(['completed']);
    expect(await holdsOf(s.account_id)).toEqual([]);
  });

  it('12 requests bringing their own research on 2 credits: at most one message call per message paid for', async () => {
    const meeting = meetingOf(12);
    ai = fakeEngine({ gate: meeting.everyone, onWrite: meeting.arrive });
    env.deps.ai = ai;
    const s = await sender(MESSAGE_PRICES.message);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        post(s, { prospect_url: `https://www.linkedin.com/in/researched-${i}`, research_summary: 'Leads sales at Acme.' }).then((answer) => {
          if (answer.status === 402) meeting.arrive();
          return answer;
        }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, ...Array.from({ length: 11 }, () => 402)]);
    for (const r of answers.filter((a) => a.status === 402)) expect(r.json).toMatchObject({ credits_required: 2, credit_balance: 0 });
    expect(ai.written).toHaveLength(1);
    expect(ai.summarised).toHaveLength(0);
    const l = await ledger(s.account_id);
    expect(l).toMatchObject({ balance: 0, debits: [{ operation: 'message', amount: 2 }] });
    expect(l.messages).toHaveLength(1);
  });

  it('while the engine works its cost is held; an engine failure gives the hold back and debits nothing', async () => {
    const entered = deferred();
    const gate = deferred();
    ai = fakeEngine({ gate: gate.promise, onWrite: () => entered.resolve(), failMessage: true });
    env.deps.ai = ai;
    const s = await sender(100);
    const attempt = post(s, { prospect_url: PROSPECT });
    await entered.promise;
    // Held, not debited: the balance another request sees is 95, and no debit is written yet.
    expect(await ledger(s.account_id)).toMatchObject({ balance: 95, debits: [], messages: [] });
    gate.resolve();
    const res = await attempt;
    expect(res.status, res.text).toBe(502);
    expect(await ledger(s.account_id)).toEqual({ balance: 100, debits: [], messages: [], keys: [], events: [] });
    expect(await holdsOf(s.account_id)).toEqual([]);
  });

  it('a hold whose worker died is given back once it expires: by the account’s next request, or by the minute sweep', async () => {
    const s = await sender(MESSAGE_PRICES.research + MESSAGE_PRICES.message);
    // What a request does first, by a worker that then died (its process killed before storing or releasing).
    const died = async () => {
      const key = crypto.randomUUID();
      await holdCredits({ ctx: env.deps, input: { accountId: s.account_id, idempotencyKey: key, amount: 5, ttlMs: FULL_REQUEST_TIMINGS.leaseMs } });
      return key;
    };
    const expire = (key: string) =>
      env.db`update credit_holds set created_at = now() - interval '3 minutes', expires_at = now() - interval '1 minute'
             where account_id = ${s.account_id} and idempotency_key = ${key}`;

    const first = await died();
    expect((await ledger(s.account_id)).balance).toBe(0);
    // Within its lease the worker may still be going: the hold stands.
    expect((await post(s, { prospect_url: PROSPECT })).status).toBe(402);
    await expire(first);
    const paid = await post(s, { prospect_url: PROSPECT });
    expect(paid.status, paid.text).toBe(200);
    expect(await holdsOf(s.account_id)).toEqual([]);

    await env.db`select sl_grant_credits(${s.account_id}, 5)`;
    const second = await died();
    await releaseExpiredCreditHolds({ ctx: env.deps, input: {} });
    expect(await holdsOf(s.account_id)).toHaveLength(1);
    await expire(second);
    // The sweep runs with the ICP work, every minute on both schedulers.
    expect((await workIcpQueue({ ctx: env.deps, input: {} })).credit_holds.released).toBeGreaterThanOrEqual(1);
    const l = await ledger(s.account_id);
    expect(l.balance).toBe(5);
    expect(l.debits).toHaveLength(2);
    expect(await holdsOf(s.account_id)).toEqual([]);
  });

  it('a hold released under a worker that was still going: the store pays from the balance, once', async () => {
    const entered = deferred();
    const gate = deferred();
    ai = fakeEngine({ gate: gate.promise, onWrite: () => entered.resolve() });
    env.deps.ai = ai;
    const s = await sender(100);
    const attempt = post(s, { prospect_url: PROSPECT });
    await entered.promise;
    expect(await holdsOf(s.account_id)).toHaveLength(1);
    await env.db`update credit_holds set created_at = now() - interval '3 minutes', expires_at = now() - interval '1 minute'
                 where account_id = ${s.account_id}`;
    expect((await releaseExpiredCreditHolds({ ctx: env.deps, input: {} })).released).toBeGreaterThanOrEqual(1);
    expect(await holdsOf(s.account_id)).toEqual([]);
    expect((await ledger(s.account_id)).balance).toBe(100);
    gate.resolve();
    const res = await attempt;
    expect(res.status, res.text).toBe(200);
    const l = await ledger(s.account_id);
    expect(l.balance).toBe(95);
    expect(l.debits).toHaveLength(2);
  });
});
