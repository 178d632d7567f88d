import { createHmac } from 'node:crypto';
import { AiEngineError, builtinEngine, createIcp, generateIcps, type IcpDraft, MAX_GENERATION_ATTEMPTS, workIcpQueue } from '@sightline/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IcpResponse } from '../functions/api-icp-action/route.ts';
import { type FakeEngine, fakeAiEngine } from './support/ai.ts';
import { call, createTestEnv, type Json, type TestEnv } from './support/app.ts';
import { createIcpVia, type IcpAccount, icpAction, seedIcpAccount } from './support/icps.ts';
import { startReceiver } from './support/receiver.ts';

/**
 * ICP generation runs off the request path: a create queues the ICP (`generating`), a worker drafts
 * it with the AI engine from the product and fills only what the caller left out. Failures that may
 * pass are retried (1, 5, 30 minutes later), others end `failed` with the reason; a worker that
 * died is taken over when its lease runs out. These drive the worker by hand with a fake engine.
 */
let env: TestEnv;
let acct: IcpAccount;

const DRAFT: IcpDraft = {
  name: 'Drafted name',
  description: 'Drafted description',
  job_titles: ['Drafted title'],
  pain_points: ['Drafted pain'],
  value_drivers: ['Drafted value'],
  industry_focus: ['Computer Software'],
  company_characteristics: { employee_ranges: ['51-200'], countries: ['GB'] },
};

type FakeCall = FakeEngine['drafted'][number];

/** An engine that drafts what `answer` says (support/ai.ts), and the drafts it was asked for. */
function draftingEngine(answer: (call: FakeCall, n: number) => Promise<unknown>) {
  const engine = fakeAiEngine({ name: 'fake:model-1', draft: answer });
  return { engine, calls: engine.drafted };
}

beforeAll(async () => {
  env = await createTestEnv();
  acct = await seedIcpAccount(env);
});
afterEach(async () => {
  await env.settle();
  env.deps.ai = builtinEngine;
});
afterAll(() => env.close());

/** An ICP queued for generation, made by the verb (so no kick races the worker these tests step). */
const queue = async (fields: Json = {}) =>
  String((await createIcp({ ctx: env.deps, input: { accountId: acct.account_id, icp: { product_id: acct.product_id, ...fields } } })).id);

interface IcpRow {
  workflow_status: string;
  review_status: string;
  name: string;
  description: string;
  job_titles: string[];
  pain_points: string[];
  value_drivers: string[];
  industry_focus: string[];
  company_characteristics: Json;
  engine: string | null;
  failure_reason: string | null;
  generation_attempts: number;
  due_in_s: number | null;
}

async function icpRow(id: string): Promise<IcpRow> {
  const [row] = await env.db<IcpRow>`
    select workflow_status, review_status, name, description, job_titles, pain_points, value_drivers, industry_focus,
      company_characteristics, engine, failure_reason, generation_attempts,
      round(extract(epoch from generation_due_at - now()))::int as due_in_s
    from icps where id = ${id}`;
  if (!row) throw new Error(`no ICP ${id}`);
  return row;
}

async function accountEvents(name: string): Promise<Json[]> {
  const rows = await env.db<{ body: string }>`
    select body from events where partner_account_id = ${acct.account_id} and destination = 'account' and event = ${name} order by created_at`;
  return rows.map((r) => JSON.parse(r.body) as Json);
}

describe('a successful draft', () => {
  it('fills only the fields the caller left out, records the engine, and tells the account', async () => {
    const fake = draftingEngine(async () => DRAFT);
    env.deps.ai = fake.engine;
    const id = await queue({ name: 'Caller name', job_titles: ['VP of Sales'], company_characteristics: { countries: ['US'] } });
    expect(await generateIcps({ ctx: env.deps, input: {} })).toEqual({ generated: 1, retrying: 0, failed: 0, claims: 1 });

    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]).toEqual({
      product: {
        name: 'Pipeline Radar',
        url: 'https://pipeline-radar.example.com',
        description: 'Sales intelligence software that shows B2B SaaS sales teams which companies visit their website.',
        value_propositions: ['Know which accounts are in market'],
        target_customers: ['B2B SaaS companies with 50 to 500 employees'],
      },
      given: { name: 'Caller name', job_titles: ['VP of Sales'], company_characteristics: { countries: ['US'] } },
    });
    expect(await icpRow(id)).toMatchObject({
      workflow_status: 'generated',
      review_status: 'pending_review',
      name: 'Caller name',
      description: 'Drafted description',
      job_titles: ['VP of Sales'],
      pain_points: ['Drafted pain'],
      value_drivers: ['Drafted value'],
      industry_focus: ['Computer Software'],
      company_characteristics: { countries: ['US'] },
      engine: 'fake:model-1',
      failure_reason: null,
      generation_attempts: 1,
      due_in_s: null,
    });
    const listed = (await icpAction(env, acct, { action: 'list_icps' })).body.data as Json[];
    expect(IcpResponse.shape.generated_by.parse(listed.find((i) => i.id === id)?.generated_by)).toBe('fake:model-1');
    expect((await accountEvents('icp.generated')).map((e) => e.data)).toContainEqual({
      icp_id: id,
      name: 'Caller name',
      product_id: acct.product_id,
      generated_by: 'fake:model-1',
    });
  });

  it('asks no engine when the caller gave every field: generated_by is caller', async () => {
    const fake = draftingEngine(async () => DRAFT);
    env.deps.ai = fake.engine;
    const { name, description, job_titles, pain_points, value_drivers, industry_focus, company_characteristics } = DRAFT;
    const id = await queue({ name, description, job_titles, pain_points, value_drivers, industry_focus, company_characteristics });
    await generateIcps({ ctx: env.deps, input: {} });
    expect(fake.calls).toHaveLength(0);
    expect(await icpRow(id)).toMatchObject({ workflow_status: 'generated', engine: 'caller', name: 'Drafted name' });
  });
});

describe('failures', () => {
  it('a failure that may pass is retried a minute later, and the retry succeeds', async () => {
    const fake = draftingEngine(async (_c, n) => {
      if (n === 1) throw new AiEngineError('the model answered 503', true);
      return DRAFT;
    });
    env.deps.ai = fake.engine;
    const id = await queue();
    expect(await generateIcps({ ctx: env.deps, input: {} })).toMatchObject({ generated: 0, retrying: 1, failed: 0 });
    const waiting = await icpRow(id);
    expect(waiting).toMatchObject({ workflow_status: 'generating', failure_reason: null, generation_attempts: 1 });
    expect(waiting.due_in_s).toBeGreaterThanOrEqual(58);
    expect(waiting.due_in_s).toBeLessThanOrEqual(60);
    // Not due yet: a run now claims nothing.
    expect(await generateIcps({ ctx: env.deps, input: {} })).toMatchObject({ claims: 0 });

    await env.db`update icps set generation_due_at = now() where id = ${id}`;
    expect(await generateIcps({ ctx: env.deps, input: {} })).toMatchObject({ generated: 1 });
    expect(await icpRow(id)).toMatchObject({ workflow_status: 'generated', engine: 'fake:model-1', generation_attempts: 2 });
  });

  it('backs off 1, 5 and 30 minutes, then the last attempt ends failed with the reason', async () => {
    const fake = draftingEngine(async () => {
      throw new AiEngineError('the model timed out after 30 s', true);
    });
    env.deps.ai = fake.engine;
    const id = await queue();
    const delays: Array<number | null> = [];
    for (let i = 0; i < MAX_GENERATION_ATTEMPTS; i++) {
      await env.db`update icps set generation_due_at = now() where id = ${id} and workflow_status = 'generating'`;
      await generateIcps({ ctx: env.deps, input: {} });
      delays.push((await icpRow(id)).due_in_s);
    }
    expect(delays.map((d) => (d === null ? null : Math.round(d / 60)))).toEqual([1, 5, 30, null]);
    expect(await icpRow(id)).toMatchObject({
      workflow_status: 'failed',
      failure_reason: 'the model timed out after 30 s',
      generation_attempts: MAX_GENERATION_ATTEMPTS,
    });
    expect(fake.calls).toHaveLength(MAX_GENERATION_ATTEMPTS);
  });

  it('a failure no retry cures ends failed at once, with the reason, and the account hears of it; regenerate starts again', async () => {
    env.deps.ai = draftingEngine(async () => {
      throw new AiEngineError('the model refused: content policy', false);
    }).engine;
    const id = await queue();
    expect(await generateIcps({ ctx: env.deps, input: {} })).toMatchObject({ failed: 1 });
    expect(await icpRow(id)).toMatchObject({ workflow_status: 'failed', failure_reason: 'the model refused: content policy', due_in_s: null });
    expect((await accountEvents('icp.generation_failed')).map((e) => e.data)).toContainEqual({
      icp_id: id,
      product_id: acct.product_id,
      reason: 'the model refused: content policy',
    });
    const listed = ((await icpAction(env, acct, { action: 'list_icps' })).body.data as Json[]).find((i) => i.id === id);
    expect(listed).toMatchObject({ workflow_status: 'failed', failure_reason: 'the model refused: content policy', generated_by: null });

    env.deps.ai = draftingEngine(async () => DRAFT).engine;
    const again = await icpAction(env, acct, { action: 'regenerate_icp', icp_id: id });
    expect(again.body).toMatchObject({ workflow_status: 'generating', failure_reason: null });
    await env.settle(); // the kick after regenerate
    expect(await icpRow(id)).toMatchObject({ workflow_status: 'generated', generation_attempts: 1, engine: 'fake:model-1' });
  });

  it('a draft that does not validate counts as a failed attempt, retried', async () => {
    env.deps.ai = draftingEngine(async () => ({ ...DRAFT, job_titles: 'not a list' })).engine;
    const id = await queue();
    expect(await generateIcps({ ctx: env.deps, input: {} })).toMatchObject({ retrying: 1 });
    expect(await icpRow(id)).toMatchObject({ workflow_status: 'generating', generation_attempts: 1 });
    await env.db`update icps set workflow_status = 'failed', failure_reason = 'test', generation_due_at = null where id = ${id}`;
  });

  it('a draft holding text Postgres cannot store (NUL) counts as a failed attempt, not a stuck ICP', async () => {
    env.deps.ai = draftingEngine(async () => ({ ...DRAFT, description: 'bad \u0000 text' })).engine;
    const id = await queue();
    expect(await generateIcps({ ctx: env.deps, input: {} })).toMatchObject({ retrying: 1 });
    expect(await icpRow(id)).toMatchObject({ workflow_status: 'generating', generation_attempts: 1 });
    expect((await icpRow(id)).due_in_s).toBeGreaterThan(30);
    await env.db`update icps set workflow_status = 'failed', failure_reason = 'test', generation_due_at = null where id = ${id}`;
  });
});

describe('leases', () => {
  it('workers that each died mid-attempt use the attempts up: past the limit the ICP ends failed, not retried forever', async () => {
    env.deps.ai = draftingEngine(async () => DRAFT).engine;
    const id = await queue();
    // MAX_GENERATION_ATTEMPTS workers claimed it and died (their leases ran out, nothing settled).
    for (let i = 0; i < MAX_GENERATION_ATTEMPTS; i++) {
      await env.db`select * from sl_claim_icp_generations(10, 1)`;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(await generateIcps({ ctx: env.deps, input: {} })).toMatchObject({ failed: 1, generated: 0 });
    expect(await icpRow(id)).toMatchObject({ workflow_status: 'failed', failure_reason: expect.stringMatching(/no attempt finished/) });
  });

  it('a worker that died holding a claim is taken over once its lease runs out', async () => {
    env.deps.ai = draftingEngine(async () => DRAFT).engine;
    const id = await queue();
    // The dead worker: it claimed with a 50 ms lease and never settled.
    const [dead] = await env.db<{ id: string; attempt: number }>`select * from sl_claim_icp_generations(10, 50)`;
    expect(dead).toEqual({ id, attempt: 1 });
    expect(await generateIcps({ ctx: env.deps, input: {} })).toMatchObject({ claims: 0 });
    await new Promise((r) => setTimeout(r, 80));
    expect(await generateIcps({ ctx: env.deps, input: {} })).toMatchObject({ generated: 1 });
    expect(await icpRow(id)).toMatchObject({ workflow_status: 'generated', generation_attempts: 2 });
  });

  it('a settle from a worker whose claim was taken over changes nothing', async () => {
    env.deps.ai = draftingEngine(async () => DRAFT).engine;
    const id = await queue();
    await generateIcps({ ctx: env.deps, input: {} });
    const [late] = await env.db<{ settled: boolean }>`
      select sl_settle_icp_generation(${id}::uuid, ${JSON.stringify({ ...DRAFT, name: 'Late' })}::text::jsonb, 'late') as settled`;
    expect(late?.settled).toBe(false);
    expect(await icpRow(id)).toMatchObject({ name: 'Drafted name', engine: 'fake:model-1' });
  });
});

describe('the built-in engine, end to end', () => {
  it('with no LLM configured, a create becomes a generated ICP off the request, and the account webhook hears it signed', async () => {
    const receiver = await startReceiver();
    const secret = 'account-webhook-secret-123';
    await env.db`update accounts set webhook_url = ${receiver.url}, webhook_secret_sealed = ${await env.deps.keyring.seal(secret)}
                 where id = ${acct.account_id}`;
    try {
      env.deps.ai = builtinEngine;
      const id = String((await createIcpVia(env, acct, { qualify_threshold: 60 })).id);
      await env.settle();
      // The kick after the create did it: the scheduled run finds nothing left.
      expect((await workIcpQueue({ ctx: env.deps, input: {} })).generation).toMatchObject({ claims: 0 });
      const icp = IcpResponse.parse({
        success: true,
        ...(((await icpAction(env, acct, { action: 'list_icps' })).body.data as Json[]).find((i) => i.id === id) ?? {}),
      });
      expect(icp).toMatchObject({ workflow_status: 'generated', review_status: 'pending_review', generated_by: 'builtin', qualify_threshold: 60 });
      expect(icp.name.length).toBeGreaterThan(0);
      expect(icp.description).toMatch(/Sales intelligence software/);
      expect(icp.job_titles.length).toBeGreaterThan(0);
      expect(icp.industry_focus.length).toBeGreaterThan(0);

      const hook = receiver.received.find((r) => JSON.parse(r.body).event === 'icp.generated' && JSON.parse(r.body).data.icp_id === id);
      expect(hook).toBeDefined();
      const ts = String(hook?.headers['x-service-timestamp']);
      expect(hook?.headers['x-service-signature']).toBe(createHmac('sha256', secret).update(`${ts}.${hook?.body}`).digest('hex'));
    } finally {
      await env.db`update accounts set webhook_url = null, webhook_secret_sealed = null where id = ${acct.account_id}`;
      await receiver.close();
    }
  });

  it('the scheduled sweep function drafts what no kick did', async () => {
    env.deps.ai = builtinEngine;
    const id = await queue();
    env.deps.sweepSecret = 'a-sweep-secret-of-at-least-thirty-two-characters';
    try {
      const res = await call(env, 'sweep-icp-work', { method: 'POST', headers: { authorization: `Bearer ${env.deps.sweepSecret}` } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        success: true,
        sweep: 'icp-work',
        result: { generation: { generated: 1, claims: 1 }, scoring: expect.any(Object) },
      });
    } finally {
      env.deps.sweepSecret = undefined;
    }
    expect(await icpRow(id)).toMatchObject({ workflow_status: 'generated', engine: 'builtin' });
  });
});
