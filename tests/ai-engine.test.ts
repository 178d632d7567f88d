import { createBuiltinEngine } from '@sightline/core/ai/builtin-engine';
import {
  AiEngineError,
  CONNECTION_NOTE_MAX_CHARS,
  countCharacters,
  countWords,
  GeneratedMessage,
  IcpDraft,
  MESSAGE_WORD_LIMITS,
  type MessageTemplate,
  type ProductFacts,
  type ProspectProfile,
  ResearchSummary,
  type SenderProfile,
} from '@sightline/core/ai/engine';
import { createOpenAiCompatibleEngine, type OpenAiCompatibleOptions, strictJsonSchema } from '@sightline/core/ai/openai-compatible';
import { aiEngineFor } from '@sightline/core/compose/build-deps';
import { parseEnv } from '@sightline/core/compose/config';
import { urlOnlyProfile } from '@sightline/core/research/url-only';
import { delay, HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { mockHttpServer } from './support/mock-http.ts';
import { rejection } from './support/rejection.ts';

/*
 * The OpenAI-compatible adapter against chat-completions answers in the shapes the servers send
 * (OpenAI's `chat.completion` object with `message.refusal`, `finish_reason`; its error envelope
 * `{error: {message, type, param, code}}`; `Retry-After`), and the built-in engine's rules.
 */

const BASE = 'https://llm.test/v1';
const AZURE_BASE = 'https://acme-ai.openai.azure.com/openai/deployments/gpt-4o-prod';
const KEY = 'sk-test-Zq8v1XhB0tW3pL7mN4cR';
const MODEL = 'gpt-4o-mini';

const product: ProductFacts = {
  name: 'Beacon',
  url: 'https://beacon.example.com',
  description: 'Beacon identifies the companies visiting your website and tells your sales team who to call.',
  value_propositions: ['Turn anonymous website visitors into qualified pipeline', 'Alert reps in Slack when a target account is on the pricing page'],
  target_customers: ['B2B SaaS sales teams'],
};

const profile: ProspectProfile = {
  linkedin_url: 'https://www.linkedin.com/in/jane-doe-4a1b2c',
  full_name: 'Jane Doe',
  headline: 'VP Sales at Acme | Building revenue teams',
  job_title: 'VP Sales',
  company: 'Acme',
  industry: 'Computer Software',
  location: 'Austin, Texas, United States',
  summary: 'I build and coach sales teams that sell to mid-market companies. Previously led outbound at Globex.',
  experience: [
    { title: 'VP Sales', company: 'Acme', start: '2021-04', end: null },
    { title: 'Head of Outbound', company: 'Globex', start: '2017-01', end: '2021-03' },
  ],
  skills: ['Sales Management', 'SaaS', 'Pipeline Management', 'Salesforce'],
  source: 'people-data-labs',
};

const sender: SenderProfile = { name: 'Sam Seller', title: 'Account Executive', company: 'Beacon' };

const research: ResearchSummary = {
  recommended_focus: 'Her outbound team at Acme.',
  prospect_insights: ['VP Sales at Acme'],
  messaging_strategy: 'Short and specific.',
  product_alignment: 'Beacon feeds outbound with visiting accounts.',
  should_send_message: true,
};

const goodIcp: IcpDraft = {
  name: 'Beacon: B2B SaaS sales teams',
  description: 'Sales-led B2B SaaS companies that want to act on website visits.',
  job_titles: ['VP of Sales'],
  pain_points: ['Visitors leave unidentified'],
  value_drivers: ['More qualified pipeline'],
  industry_focus: ['Computer Software'],
  company_characteristics: { employee_ranges: ['51-200'] },
};

// ---------------------------------------------------------------------------------------------
// A scripted server
// ---------------------------------------------------------------------------------------------

interface Seen {
  url: URL;
  headers: Headers;
  body: {
    model: string;
    messages: Array<{ role: string; content: string }>;
    response_format?: { type: string; json_schema: { name: string; strict: boolean; schema: Record<string, unknown> } };
  };
}

/** An OpenAI `chat.completion` object as the API returns it. */
function completion(content: string | null, opts: { refusal?: string; finish_reason?: string } = {}) {
  return {
    id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
    object: 'chat.completion',
    created: 1741569952,
    model: 'gpt-4o-mini-2024-07-18',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, refusal: opts.refusal ?? null, annotations: [] },
        logprobs: null,
        finish_reason: opts.finish_reason ?? 'stop',
      },
    ],
    usage: { prompt_tokens: 512, completion_tokens: 64, total_tokens: 576 },
    service_tier: 'default',
    system_fingerprint: 'fp_06737a9306',
  };
}

const answer = (value: unknown) => () => HttpResponse.json(completion(typeof value === 'string' ? value : JSON.stringify(value)));
const openAiError =
  (status: number, message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  () =>
    HttpResponse.json({ error: { message, type: 'invalid_request_error', param: null, code: null, ...extra } }, { status, headers });

/** Answers each request with the next reply (the last one repeats) and records what was sent. */
function script(base: string, ...replies: Array<() => Response | Promise<Response>>): Seen[] {
  const seen: Seen[] = [];
  server.use(
    http.post(`${base}/chat/completions`, async ({ request }) => {
      seen.push({ url: new URL(request.url), headers: request.headers, body: (await request.json()) as Seen['body'] });
      const reply = replies[Math.min(seen.length - 1, replies.length - 1)];
      if (!reply) throw new Error('no reply scripted');
      return reply();
    }),
  );
  return seen;
}

const sleeps: number[] = [];
function engine(opts: Partial<OpenAiCompatibleOptions> = {}) {
  return createOpenAiCompatibleEngine({
    baseUrl: BASE,
    model: MODEL,
    apiKey: KEY,
    timeoutMs: 2_000,
    maxRetries: 2,
    retryBaseDelayMs: 8,
    // Waits are recorded, not slept: the suite stays fast and the backoff stays visible.
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...opts,
  });
}

const failure = (p: Promise<unknown>) => rejection(p, AiEngineError);

const server = mockHttpServer({ clear: [sleeps] });

const write = (ai = engine(), template: MessageTemplate = {}) =>
  ai.writeMessage({ profile, research, product, template, sender, additionalResearch: null });

// ---------------------------------------------------------------------------------------------
// The OpenAI-compatible adapter
// ---------------------------------------------------------------------------------------------

describe('OpenAI-compatible engine: the request', () => {
  it('is exactly {model, messages, response_format: json_schema strict}, with a bearer key', async () => {
    const seen = script(BASE, answer(goodIcp));
    const result = await engine().draftIcp({ product, given: { industry_focus: ['Computer Software'] } });

    expect(result).toEqual({ value: goodIcp, engine: 'openai-compatible:gpt-4o-mini' });
    expect(seen).toHaveLength(1);
    const [req] = seen;
    expect(req?.url.href).toBe('https://llm.test/v1/chat/completions');
    expect(req?.headers.get('authorization')).toBe(`Bearer ${KEY}`);
    expect(req?.headers.get('api-key')).toBeNull();
    // Reasoning models refuse max_tokens, n, tool_choice or logit_bias: none are sent.
    expect(Object.keys(req?.body ?? {}).sort()).toEqual(['messages', 'model', 'response_format']);
    expect(req?.body.model).toBe(MODEL);
    expect(req?.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'icp_draft', strict: true } });
    expect(req?.body.response_format?.json_schema.schema).toEqual(strictJsonSchema(IcpDraft));
    expect(req?.body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(JSON.parse(req?.body.messages[1]?.content ?? '')).toMatchObject({
      product: { name: 'Beacon' },
      given: { industry_focus: ['Computer Software'] },
    });
  });

  it('sends a schema OpenAI strict mode accepts: every object closed, every property required, optional ones nullable', () => {
    for (const schema of [IcpDraft, ResearchSummary, GeneratedMessage]) {
      const visit = (node: Record<string, unknown>): void => {
        expect(node).not.toHaveProperty('$schema');
        expect(node).not.toHaveProperty('maxLength');
        if (node.type === 'object') {
          expect(node.additionalProperties).toBe(false);
          expect(node.required).toEqual(Object.keys(node.properties as object));
        }
        for (const child of Object.values((node.properties as Record<string, Record<string, unknown>>) ?? {})) visit(child);
        if (node.items) visit(node.items as Record<string, unknown>);
        for (const alt of (node.anyOf as Record<string, unknown>[]) ?? []) visit(alt);
      };
      visit(strictJsonSchema(schema));
    }
    const characteristics = (strictJsonSchema(IcpDraft).properties as Record<string, { properties: Record<string, unknown> }>)
      .company_characteristics;
    expect(characteristics?.properties.revenue_range).toEqual({
      anyOf: [{ type: 'string', description: 'Constraints: maxLength: 100' }, { type: 'null' }],
    });
  });

  it("turns the nulls of optional fields back into absence, and keeps the caller's given fields", async () => {
    script(
      BASE,
      answer({
        ...goodIcp,
        name: 'Model name',
        company_characteristics: { employee_ranges: ['51-200'], countries: null, regions: ['europe'], seniorities: null, revenue_range: null },
      }),
    );
    const { value } = await engine().draftIcp({ product, given: { name: 'My ICP' } });
    expect(value.name).toBe('My ICP');
    expect(value.company_characteristics).toEqual({ employee_ranges: ['51-200'], regions: ['europe'] });
  });

  it('talks to an Azure OpenAI deployment with the api-key header and an api-version query', async () => {
    const seen = script(AZURE_BASE, answer({ message: 'Hi Jane, would you be open to connecting?' }));
    const result = await write(engine({ baseUrl: AZURE_BASE, model: 'gpt-4o' }));
    expect(result.engine).toBe('openai-compatible:gpt-4o');
    expect(seen[0]?.url.pathname).toBe('/openai/deployments/gpt-4o-prod/chat/completions');
    expect(seen[0]?.url.searchParams.get('api-version')).toBe('2024-10-21');
    expect(seen[0]?.headers.get('api-key')).toBe(KEY);
    expect(seen[0]?.headers.get('authorization')).toBeNull();
  });

  it('sends no Authorization header to a local server configured without a key', async () => {
    const seen = script(BASE, answer({ message: 'Hi Jane, would you be open to connecting?' }));
    await write(engine({ apiKey: undefined, model: 'llama3.1:8b' }));
    expect(seen[0]?.headers.get('authorization')).toBeNull();
  });

  it('tells the model the template and the rule against invented facts', async () => {
    const seen = script(BASE, answer({ message: 'Jane, worth a quick chat?' }));
    await write(engine(), { tone: 'direct', length: 'short', message_type: 'inmail', call_to_action: 'Book a demo' });
    const system = seen[0]?.body.messages[0]?.content ?? '';
    expect(system).toContain('LinkedIn InMail');
    expect(system).toContain('Tone: direct');
    expect(system).toContain('at most 60 words');
    expect(system).toMatch(/never invent/);
    const data = JSON.parse(seen[0]?.body.messages[1]?.content ?? '');
    expect(data.settings).toMatchObject({ message_type: 'inmail', tone: 'direct', length: 'short', max_words: 60, call_to_action: 'Book a demo' });
    expect(data.prospect).toMatchObject({ full_name: 'Jane Doe', job_title: 'VP Sales' });
    expect(data.sender).toEqual(sender);
  });
});

describe('OpenAI-compatible engine: the answer', () => {
  it('a refusal fails at once, not retryable, with the refusal text', async () => {
    const seen = script(BASE, () => HttpResponse.json(completion(null, { refusal: "I'm sorry, I can't assist with that request." })));
    const err = await failure(write());
    expect(err.retryable).toBe(false);
    expect(err.message).toContain("the model refused: I'm sorry, I can't assist with that request.");
    expect(seen).toHaveLength(1);
  });

  it('a truncated answer (finish_reason "length") is repaired once, still with structured output', async () => {
    const seen = script(
      BASE,
      () => HttpResponse.json(completion('{"message": "Hi Jane, I noticed your work as VP Sales at Acme and wan', { finish_reason: 'length' })),
      answer({ message: 'Hi Jane, open to connecting?' }),
    );
    const result = await write();
    expect(result).toEqual({ value: { message: 'Hi Jane, open to connecting?' }, engine: 'openai-compatible:gpt-4o-mini' });
    expect(seen).toHaveLength(2);
    const repair = seen[1]?.body.messages ?? [];
    expect(repair.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(repair[2]?.content).toContain('I noticed your work as VP Sales');
    expect(repair[3]?.content).toContain('cut off');
    // Truncation says nothing about structured-output support.
    expect(seen[1]?.body.response_format?.type).toBe('json_schema');
  });

  it('a truncated answer twice fails retryable', async () => {
    const seen = script(BASE, () => HttpResponse.json(completion('{"message": "Hi', { finish_reason: 'length' })));
    const err = await failure(write());
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('still unusable after one repair');
    expect(seen).toHaveLength(2);
  });

  it('an answer that does not match the schema is repaired with the validation error', async () => {
    const seen = script(BASE, answer({ text: 'Hi Jane' }), answer({ message: 'Hi Jane, open to connecting?' }));
    expect((await write()).value.message).toBe('Hi Jane, open to connecting?');
    expect(seen[1]?.body.messages[3]?.content).toContain('at message');
    expect(seen[1]?.body.response_format?.type).toBe('json_schema');
  });

  it('a prose answer is repaired once in prompted JSON; the next call asks for structured output again', async () => {
    const seen = script(
      BASE,
      answer("Sure! Here's a message for Jane: Hi Jane, open to connecting?"),
      answer('```json\n{"message": "Hi Jane, open to connecting?"}\n```'),
      answer({ message: 'Hi again' }),
    );
    const ai = engine();
    const result = await write(ai);
    expect(result.value.message).toBe('Hi Jane, open to connecting?');
    expect(seen[0]?.body.response_format?.type).toBe('json_schema');
    expect(seen[1]?.body).not.toHaveProperty('response_format');
    expect(seen[1]?.body.messages[0]?.content).toContain('JSON Schema');
    expect(seen[1]?.body.messages[2]?.content).toContain("Sure! Here's a message");

    // One model's lapse into prose says nothing about the server: the next call is structured again.
    expect((await write(ai)).value.message).toBe('Hi again');
    expect(seen).toHaveLength(3);
    expect(seen[2]?.body.response_format?.type).toBe('json_schema');
    expect(seen[2]?.body.messages[0]?.content).not.toContain('Answer with one JSON object and nothing else');
  });

  it('prose answers to three structured requests in a row: the server ignores response_format, so prompted JSON for a while', async () => {
    let now = 1_000_000;
    const seen: Seen[] = [];
    server.use(
      http.post(`${BASE}/chat/completions`, async ({ request }) => {
        const body = (await request.json()) as Seen['body'];
        seen.push({ url: new URL(request.url), headers: request.headers, body });
        // A server that drops response_format: its model answers prose unless the prompt itself asks for JSON.
        return HttpResponse.json(completion(body.response_format ? 'Hi Jane, open to connecting?' : JSON.stringify({ message: 'Hi Jane' })));
      }),
    );
    const ai = engine({ now: () => now });
    // Each call: prose to the structured request, then the repair turn in prompted JSON.
    for (let i = 0; i < 3; i++) expect((await write(ai)).value.message).toBe('Hi Jane');
    expect(seen.map((r) => Boolean(r.body.response_format))).toEqual([true, false, true, false, true, false]);
    const count = seen.length;
    await write(ai);
    expect(seen).toHaveLength(count + 1);
    expect(seen[count]?.body).not.toHaveProperty('response_format');
    // After the cool-off the server is asked for structured output again.
    now += 10 * 60_000;
    await write(ai);
    expect(seen[count + 1]?.body.response_format?.type).toBe('json_schema');
  });

  it('an answer invalid twice fails, retryable', async () => {
    const seen = script(BASE, answer('not json'), answer('still not json'));
    const err = await failure(write());
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('openai-compatible:gpt-4o-mini');
    expect(seen).toHaveLength(2);
  });

  it('a connection note over 300 characters is sent back for a shorter one', async () => {
    const seen = script(BASE, answer({ message: 'x'.repeat(301) }), answer({ message: 'Hi Jane, open to connecting?' }));
    expect((await write()).value.message).toBe('Hi Jane, open to connecting?');
    expect(seen[1]?.body.messages[3]?.content).toContain('301 characters');
  });

  it('400 naming response_format falls back to prompted JSON, remembered for ten minutes, then structured output is tried again', async () => {
    let now = 1_000_000;
    const seen = script(
      BASE,
      openAiError(400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", { param: 'response_format' }),
      answer({ message: 'Hi Jane, open to connecting?' }),
    );
    const ai = engine({ now: () => now });
    expect((await write(ai)).value.message).toBe('Hi Jane, open to connecting?');
    expect(seen).toHaveLength(2);
    expect(Object.keys(seen[1]?.body ?? {}).sort()).toEqual(['messages', 'model']);
    expect(seen[1]?.body.messages[0]?.content).toContain('Answer with one JSON object and nothing else');
    expect(seen[1]?.body.messages[0]?.content).toContain('"additionalProperties":false');
    expect(sleeps).toEqual([]);

    // Within the cool-off the server is not asked for what it refused.
    now += 10 * 60_000 - 1;
    await write(ai);
    expect(seen).toHaveLength(3);
    expect(seen[2]?.body).not.toHaveProperty('response_format');

    // Past it, structured output is asked for again (a server can be upgraded, a proxy's error can pass).
    now += 1;
    await write(ai);
    expect(seen).toHaveLength(4);
    expect(seen[3]?.body.response_format?.type).toBe('json_schema');
  });

  it('another 400 is a request problem: not retryable', async () => {
    const seen = script(BASE, openAiError(400, "Invalid value for 'model': 'gpt-5-turbo-xl'."));
    const err = await failure(write());
    expect(err.retryable).toBe(false);
    expect(err.message).toContain("answered HTTP 400: Invalid value for 'model'");
    expect(seen).toHaveLength(1);
  });
});

describe('OpenAI-compatible engine: transport failures', () => {
  it('429 with Retry-After waits as asked, then succeeds', async () => {
    const seen = script(
      BASE,
      openAiError(
        429,
        'Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3.',
        { type: 'requests', code: 'rate_limit_exceeded' },
        {
          'Retry-After': '2',
        },
      ),
      answer({ message: 'Hi Jane, open to connecting?' }),
    );
    const result = await write();
    expect(result.engine).toBe('openai-compatible:gpt-4o-mini');
    expect(seen).toHaveLength(2);
    expect(sleeps).toEqual([2000]);
  });

  it('a Retry-After longer than the engine will wait gives up at once, retryable', async () => {
    const seen = script(BASE, openAiError(429, 'You exceeded your current quota.', { code: 'insufficient_quota' }, { 'Retry-After': '3600' }));
    const err = await failure(write());
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('asked to wait 3600 s');
    expect(seen).toHaveLength(1);
  });

  it('5xx exhausts the retries with exponential backoff, then fails retryable', async () => {
    const seen = script(BASE, () =>
      HttpResponse.json({ error: { message: 'The server had an error while processing your request.', type: 'server_error' } }, { status: 500 }),
    );
    const err = await failure(write());
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('answered HTTP 500: The server had an error');
    expect(err.message).toContain('3 attempts');
    expect(seen).toHaveLength(3);
    // Steps of 8 and 16 ms, each jittered within its upper half.
    expect(sleeps).toHaveLength(2);
    expect(sleeps[0]).toBeGreaterThanOrEqual(4);
    expect(sleeps[0]).toBeLessThanOrEqual(8);
    expect(sleeps[1]).toBeGreaterThanOrEqual(8);
    expect(sleeps[1]).toBeLessThanOrEqual(16);
  });

  it('401 is not retryable and never repeats the key, even when the server echoes it', async () => {
    const seen = script(
      BASE,
      openAiError(401, `Incorrect API key provided: ${KEY}. You can find your API key at https://platform.openai.com/account/api-keys.`, {
        code: 'invalid_api_key',
      }),
    );
    const err = await failure(write());
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('answered HTTP 401');
    expect(err.message).not.toContain(KEY);
    expect(String(err.stack)).not.toContain(KEY);
    expect(seen).toHaveLength(1);
  });

  it('403 and 404 are not retryable either', async () => {
    script(BASE, openAiError(403, 'Project does not have access to model gpt-4o-mini'));
    expect((await failure(write())).retryable).toBe(false);
    server.resetHandlers();
    script(BASE, openAiError(404, 'The model `gpt-4o-mini` does not exist or you do not have access to it.', { code: 'model_not_found' }));
    const err = await failure(write());
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('check the base URL and the model name');
  });

  it('a server that does not answer in time is retried, then given up, retryable', async () => {
    const seen = script(BASE, async () => {
      await delay(500);
      return HttpResponse.json(completion('{"message":"late"}'));
    });
    const started = Date.now();
    const err = await failure(write(engine({ timeoutMs: 40, maxRetries: 1 })));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('no answer within 40 ms');
    expect(seen).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(400);
  });

  it('no failure message contains the key', async () => {
    const replies = [
      () => HttpResponse.json({ error: { message: `bad key ${KEY}` } }, { status: 500 }),
      () => HttpResponse.json({ error: { message: `forbidden for ${KEY}` } }, { status: 403 }),
      () => HttpResponse.json(completion(null, { refusal: `no (${KEY})` })),
      () => HttpResponse.json({ error: { message: `upstream failed for ${KEY}`, code: 502 } }),
    ];
    for (const reply of replies) {
      server.resetHandlers();
      script(BASE, reply);
      const err = await failure(write(engine({ maxRetries: 0 })));
      expect(err.message).not.toContain(KEY);
    }
  });
});

describe('engine choice', () => {
  it('is the built-in engine without LLM_BASE_URL, the adapter with it', () => {
    expect(aiEngineFor(parseEnv({})).name).toBe('builtin');
    expect(aiEngineFor(parseEnv({ LLM_BASE_URL: 'http://localhost:11434/v1', LLM_MODEL: 'llama3.1:8b' })).name).toBe('openai-compatible:llama3.1:8b');
  });

  it('configuration names what is missing', () => {
    expect(() => parseEnv({ LLM_BASE_URL: 'https://api.openai.com/v1' })).toThrow(/LLM_BASE_URL and LLM_MODEL are set together/);
    expect(() => parseEnv({ LLM_BASE_URL: 'ftp://llm.example.com', LLM_MODEL: 'm' })).toThrow(/LLM_BASE_URL must be an http/);
    expect(() => parseEnv({ LLM_BASE_URL: AZURE_BASE, LLM_MODEL: 'gpt-4o' })).toThrow(/LLM_API_KEY is required for an Azure/);
    expect(parseEnv({ LLM_BASE_URL: AZURE_BASE, LLM_MODEL: 'gpt-4o', LLM_API_KEY: 'k' })).toMatchObject({
      LLM_TIMEOUT_MS: 30_000,
      LLM_MAX_RETRIES: 2,
    });
  });
});

// ---------------------------------------------------------------------------------------------
// The built-in engine
// ---------------------------------------------------------------------------------------------

describe('built-in engine', () => {
  const builtin = createBuiltinEngine();
  const thin = urlOnlyProfile('https://www.linkedin.com/in/x7f3k9');

  it('gives the same answer for the same input', async () => {
    const input = { product, given: {} };
    expect(await builtin.draftIcp(input)).toEqual(await builtin.draftIcp(input));
    const summary = { profile, product, additionalResearch: 'Met at SaaStr' };
    expect(await builtin.summariseResearch(summary)).toEqual(await builtin.summariseResearch(summary));
    const message = { profile, research, product, template: {}, sender, additionalResearch: null };
    expect(await builtin.writeMessage(message)).toEqual(await builtin.writeMessage(message));
  });

  it('drafts an ICP from the product words, valid against the contract', async () => {
    const { value, engine: name } = await builtin.draftIcp({
      product: { ...product, description: `${product.description} Built for SMB and mid-market teams in Europe and the US.` },
      given: {},
    });
    expect(name).toBe('builtin');
    expect(IcpDraft.parse(value)).toEqual(value);
    expect(value.name).toBe('Beacon: B2B SaaS sales teams');
    expect(value.job_titles).toContain('VP of Sales');
    expect(value.industry_focus).toEqual(['Computer Software', 'Internet']);
    expect(value.value_drivers).toEqual(product.value_propositions);
    expect(value.company_characteristics).toEqual({
      employee_ranges: ['11-50', '51-200', '201-500', '501-1000'],
      regions: ['north_america', 'europe'],
      seniorities: ['manager', 'director', 'vp'],
    });
    expect(value.description).toContain('Beacon identifies the companies visiting your website');
  });

  it("honours the caller's fields: they stand, and they steer the rest", async () => {
    const plain: ProductFacts = { name: 'Ledgerly', url: null, description: 'A better way to work.', value_propositions: [], target_customers: [] };
    const { value } = await builtin.draftIcp({ product: plain, given: { name: 'Clinics', industry_focus: ['Hospital & Health Care'] } });
    expect(value.name).toBe('Clinics');
    expect(value.industry_focus).toEqual(['Hospital & Health Care']);
    expect(value.job_titles).toContain('Chief Medical Officer');
    expect(value.pain_points).toContain('Clinicians buried in administrative work');
    expect(value.description).toContain('Hospital & Health Care');

    const titled = await builtin.draftIcp({ product: plain, given: { job_titles: ['Founder', 'CTO'] } });
    expect(titled.value.job_titles).toEqual(['Founder', 'CTO']);
    expect(titled.value.company_characteristics.seniorities).toEqual(['c_level', 'owner']);
  });

  it('falls back to stated defaults when the product says nothing it recognises', async () => {
    const bare: ProductFacts = { name: 'Widget', url: null, description: null, value_propositions: [], target_customers: [] };
    const { value } = await builtin.draftIcp({ product: bare, given: {} });
    expect(IcpDraft.parse(value)).toEqual(value);
    expect(value.industry_focus).toEqual(['Computer Software', 'Information Technology & Services', 'Internet']);
    expect(value.job_titles).toEqual(['CEO', 'Founder', 'COO', 'Head of Operations']);
    // No size or place named: no constraint invented.
    expect(value.company_characteristics).toEqual({ seniorities: ['director', 'c_level', 'owner'] });
  });

  it('summarises research from the profile; a thin profile is not worth a message', async () => {
    const rich = await builtin.summariseResearch({ profile, product, additionalResearch: 'Met at SaaStr' });
    expect(ResearchSummary.parse(rich.value)).toEqual(rich.value);
    expect(rich.value.should_send_message).toBe(true);
    expect(rich.value.prospect_insights).toContain('Current role: VP Sales at Acme.');
    expect(rich.value.prospect_insights).toContain('Previously Head of Outbound at Globex.');
    expect(rich.value.prospect_insights).toContain("From the sender's notes: Met at SaaStr");
    expect(rich.value.product_alignment).toBe(
      'Their profile points to sales work, which Beacon is built for: turn anonymous website visitors into qualified pipeline.',
    );

    const none = await builtin.summariseResearch({ profile: thin, product: null, additionalResearch: null });
    expect(ResearchSummary.parse(none.value)).toEqual(none.value);
    expect(none.value.should_send_message).toBe(false);

    const named = await builtin.summariseResearch({
      profile: urlOnlyProfile('https://www.linkedin.com/in/jane-doe-4a1b2c'),
      product,
      additionalResearch: null,
    });
    expect(named.value.should_send_message).toBe(true);
  });

  it('keeps a connection request within LinkedIn’s 300 characters, however long the inputs', async () => {
    const long = 'x'.repeat(280);
    const { value } = await builtin.writeMessage({
      profile: { ...profile, job_title: `Senior Vice President of Global Revenue ${long}`, company: `Acme ${long}` },
      research,
      product: { ...product, value_propositions: [long, long] },
      template: { message_type: 'connection_request', length: 'long', call_to_action: `Would you like to ${long}?` },
      sender,
      additionalResearch: null,
    });
    expect(GeneratedMessage.parse(value)).toEqual(value);
    expect(countCharacters(value.message)).toBeLessThanOrEqual(CONNECTION_NOTE_MAX_CHARS);
  });

  it('keeps every message type within its length’s word limit, and longer lengths say more', async () => {
    for (const message_type of ['connection_request', 'inmail', 'email', 'follow_up'] as const) {
      const words: number[] = [];
      for (const length of ['short', 'medium', 'long'] as const) {
        for (const tone of ['professional', 'friendly', 'casual', 'direct'] as const) {
          const { value, engine: name } = await builtin.writeMessage({
            profile,
            research,
            product,
            template: { message_type, length, tone },
            sender,
            additionalResearch: null,
          });
          expect(name).toBe('builtin');
          expect(GeneratedMessage.parse(value)).toEqual(value);
          expect(countWords(value.message)).toBeLessThanOrEqual(MESSAGE_WORD_LIMITS[length]);
          if (message_type === 'connection_request') expect(countCharacters(value.message)).toBeLessThanOrEqual(CONNECTION_NOTE_MAX_CHARS);
          if (tone === 'professional') words.push(countWords(value.message));
        }
      }
      expect(words[0]).toBeLessThanOrEqual(words[1] ?? 0);
      expect(words[1]).toBeLessThanOrEqual(words[2] ?? 0);
      if (message_type !== 'connection_request') expect(words[0]).toBeLessThan(words[2] ?? 0);
    }
  });

  it('writes only what it was given: names, role and product, the call to action as asked', async () => {
    const { value } = await builtin.writeMessage({
      profile,
      research,
      product,
      template: { message_type: 'email', length: 'medium', tone: 'professional', call_to_action: 'Would Thursday work for a demo' },
      sender,
      additionalResearch: null,
    });
    expect(value.message).toMatch(/^Hi Jane,/);
    expect(value.message).toContain('VP Sales at Acme');
    expect(value.message).toContain('Beacon helps B2B SaaS sales teams');
    expect(value.message).toContain('Would Thursday work for a demo.');
    expect(value.message).toMatch(/Best,\nSam Seller$/);

    const anonymous = await builtin.writeMessage({ profile: thin, research, product: null, template: {}, sender, additionalResearch: null });
    expect(anonymous.value.message).toBe('Hello, Would you be open to connecting?');
  });
});
