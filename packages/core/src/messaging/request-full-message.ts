import type { z } from '@hono/zod-openapi';
import { beginIdempotentRequest, releaseIdempotentRequest } from '../account/idempotent-request.ts';
import {
  AiEngineError,
  countCharacters,
  countWords,
  GeneratedMessage,
  messageSettings,
  type ProductFacts,
  type ProspectProfile,
  ResearchSummary,
  type SenderProfile,
} from '../ai/engine.ts';
import { startAfterWork } from '../kernel/after-work.ts';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { AppError, sqlCall } from '../kernel/errors.ts';
import { findUnstorableText } from '../kernel/storable-text.ts';
import { urlOnlyProfile } from '../research/url-only.ts';
import { researchFromCallerText } from './caller-research.ts';
import { holdCredits, releaseCreditHold } from './credit-holds.ts';
import { fullRequestCost } from './prices.ts';
import { checkedFullRequest, type FullRequestInput, type MessageProcessing } from './schemas.ts';

/** The idempotency store's name for this endpoint: a key used here cannot be replayed elsewhere. */
export const FULL_REQUEST_OPERATION = 'api-full-request';

/**
 * The clocks of one request. The work holds its key for `leaseMs`; it gives up at `deadlineMs`,
 * well inside the lease, so a repeat that takes over an expired lease never finds the first worker
 * still going. The first request waits `waitMs` for the result, then answers 202 and lets the work
 * finish in the background; a repeat with the same key then gets the stored result.
 */
export const FULL_REQUEST_TIMINGS = {
  leaseMs: 120_000,
  deadlineMs: 100_000,
  waitMs: 25_000,
  researchTimeoutMs: 20_000,
} as const;

export const PROCESSING_MESSAGE =
  'The message is still being generated. Repeat this request with the same x-idempotency-key and body to get the result; ' +
  'a repeat never makes a second message and is never charged again.';

export interface RequestFullMessageInput {
  accountId: string;
  /** The connected user who sends the message (x-user-id, already checked by the policy). */
  userId: string;
  idempotencyKey: string;
  /** The request body; checked here (schemas.ts), so every transport is equally safe. */
  request: unknown;
  /** How long this request waits for the work before answering 202 (FULL_REQUEST_TIMINGS.waitMs). */
  waitMs?: number;
  /** How long the research provider has to answer. */
  researchTimeoutMs?: number;
  /** When the work gives up altogether (must stay below the lease). */
  deadlineMs?: number;
}

/**
 * What the route answers: the message result's JSON text exactly as stored with the key (200, now
 * and on every repeat), or 202 while the work runs.
 */
export type FullRequestOutcome = { status: 200; body: string } | { status: 202; body: MessageProcessing };

interface Plan {
  accountId: string;
  userId: string;
  idempotencyKey: string;
  request: FullRequestInput;
  product: { id: string; facts: ProductFacts } | null;
  sender: SenderProfile;
  cost: ReturnType<typeof fullRequestCost>;
}

const processing = (): FullRequestOutcome => ({ status: 202, body: { success: true, status: 'processing', message: PROCESSING_MESSAGE } });

/**
 * api-full-request: researches a prospect and writes them a message on behalf of a connected user,
 * once per x-idempotency-key.
 *
 * Invariants: a key gives at most one message and one set of debits (the message, its debits, the
 * message.completed event and the key's stored response are one transaction, sl_complete_message,
 * and messages are unique per key); nothing is charged unless the message is stored; the whole cost
 * is held before any provider or engine is called (credit-holds.ts), so a request the balance cannot
 * pay for — counting what requests still at work hold — is refused with 402 before any provider or
 * engine is called, however many race; a refusal or a failure gives the hold and the key back, so
 * the caller may fix the cause and repeat with it; a repeat after completion answers the stored body
 * byte for byte.
 */
export async function requestFullMessage({ ctx, input }: VerbArgs<RequestFullMessageInput>): Promise<FullRequestOutcome> {
  const request = checkedFullRequest(input.request);
  const keyRef = { accountId: input.accountId, key: input.idempotencyKey };
  const start = await beginIdempotentRequest({
    ctx,
    input: { ...keyRef, operation: FULL_REQUEST_OPERATION, userId: input.userId, request, leaseMs: FULL_REQUEST_TIMINGS.leaseMs },
  });
  if (start.outcome === 'processing') return processing();
  if (start.outcome === 'completed') return storedOutcome(start.status, start.body);

  let plan: Plan;
  try {
    plan = await planRequest(ctx, { ...input, request });
  } catch (err) {
    await giveKeyBack(ctx, keyRef);
    throw err;
  }

  const work = produceMessage(ctx, plan, {
    deadlineMs: input.deadlineMs ?? FULL_REQUEST_TIMINGS.deadlineMs,
    researchTimeoutMs: input.researchTimeoutMs ?? FULL_REQUEST_TIMINGS.researchTimeoutMs,
  });
  const waited = await settledWithin(work, input.waitMs ?? FULL_REQUEST_TIMINGS.waitMs);
  if (waited.settled) return { status: 200, body: waited.body };
  // Past the wait: the work goes on after the response (and is logged if it fails, having given its
  // key back); a repeat with the same key answers 202 until it is stored, then the result.
  ctx.background('api-full-request', () => work);
  return processing();
}

/** Only a completed message is ever stored with a key of this operation, so its status is 200. */
function storedOutcome(status: number, body: string): FullRequestOutcome {
  if (status !== 200) throw new Error(`${FULL_REQUEST_OPERATION} key stored status ${status}`);
  return { status: 200, body };
}

async function settledWithin(work: Promise<string>, ms: number): Promise<{ settled: true; body: string } | { settled: false }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<{ settled: false }>((resolve) => {
    timer = setTimeout(() => resolve({ settled: false }), Math.max(0, ms));
  });
  try {
    return await Promise.race([work.then((body) => ({ settled: true as const, body })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function giveKeyBack(ctx: CoreDeps, keyRef: { accountId: string; key: string }): Promise<void> {
  try {
    await releaseIdempotentRequest({ ctx, input: keyRef });
  } catch (err) {
    // The key then stays held until its lease runs out; a repeat after that takes it over.
    ctx.log.error('api-full-request: could not release the idempotency key', {
      account_id: keyRef.accountId,
      error: err instanceof Error ? err.message : String(err),
    });
  }
}

function notEnoughCredits(cost: Plan['cost'], balance: number): AppError {
  const parts = cost.research > 0 ? `research ${cost.research} + message ${cost.message}` : `message ${cost.message}; research was given`;
  return new AppError('insufficient_credits', `not enough credits: this request needs ${cost.total} (${parts}), the account has ${balance}`, {
    credits_required: cost.total,
    credit_balance: balance,
  });
}

/** Everything decided before a provider is called: the product, the sender, and the cost, held from the balance. */
async function planRequest(ctx: CoreDeps, input: RequestFullMessageInput & { request: FullRequestInput }): Promise<Plan> {
  const { request } = input;
  let product: Plan['product'] = null;
  if (request.product_id !== undefined) {
    const [row] = await ctx.db<ProductFacts & { account_id: string }>`
      select account_id, name, url, description, value_propositions, target_customers from products where id = ${request.product_id}`;
    if (!row) throw new AppError('not_found', `product_id: no product ${request.product_id}`);
    if (row.account_id !== input.accountId) throw new AppError('forbidden', 'product_id: the product belongs to another account');
    product = {
      id: request.product_id,
      facts: {
        name: row.name,
        url: row.url,
        description: row.description,
        value_propositions: row.value_propositions,
        target_customers: row.target_customers,
      },
    };
  }
  const [sender] = await ctx.db<SenderProfile>`
    select name, title, company from connected_users
    where id = ${input.userId} and account_id = ${input.accountId} and status = 'connected'`;
  // The policy checked this a moment ago; a user disconnected since is refused the same way.
  if (!sender) throw new AppError('forbidden', 'x-user-id is not a user connected to this account (connect them with a connect link first)');
  // A key whose outcome was forgotten (purged after its retention) still names its message: a new
  // request under it would be refused by the store's one-message-per-key rule only after paying the
  // providers, so it is refused here, before any of that.
  const [used] = await ctx.db<{ created_at: string }>`
    select sl_iso(created_at) as created_at from messages where account_id = ${input.accountId} and idempotency_key = ${input.idempotencyKey}`;
  if (used) {
    throw new AppError(
      'idempotency_key_reused',
      `x-idempotency-key was used for a message on ${used.created_at}, whose stored result has expired; use a new key`,
    );
  }
  const cost = fullRequestCost({ researchGiven: request.research_summary !== undefined });
  // Last, so nothing after it can refuse the request with the credits still held.
  try {
    await holdCredits({
      ctx,
      input: { accountId: input.accountId, idempotencyKey: input.idempotencyKey, amount: cost.total, ttlMs: FULL_REQUEST_TIMINGS.leaseMs },
    });
  } catch (err) {
    if (err instanceof AppError && err.code === 'insufficient_credits') throw notEnoughCredits(cost, Number(err.extra.credit_balance ?? 0));
    if (err instanceof AppError && err.code === 'not_found') throw new AppError('not_found', 'no such account');
    throw err;
  }
  return {
    accountId: input.accountId,
    userId: input.userId,
    idempotencyKey: input.idempotencyKey,
    request,
    product,
    sender: { name: sender.name, title: sender.title, company: sender.company },
    cost,
  };
}

class StepTimeout extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${Math.round(ms / 100) / 10} s`);
    this.name = 'StepTimeout';
  }
}

/** Runs a step with a time limit; past it the step is abandoned (its signal aborted) and StepTimeout thrown. */
function withinTime<T>(ms: number, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        controller.abort();
        reject(new StepTimeout(ms));
      },
      Math.max(0, ms),
    );
  });
  return Promise.race([Promise.resolve().then(() => run(controller.signal)), timeout]).finally(() => clearTimeout(timer));
}

/** A 502 naming the step and what failed in it; the detail is the provider's or engine's own (keys redacted there). */
function stepFailed(step: 'research' | 'message', what: string, err: unknown): AppError {
  const detail = err instanceof Error ? err.message : String(err);
  const clipped = detail.length > 300 ? `${detail.slice(0, 299)}…` : detail;
  return new AppError(
    'upstream_failed',
    `${step} step failed: ${what}${clipped ? ` (${clipped})` : ''}; nothing was charged, and the request may be repeated with the same x-idempotency-key`,
  );
}

/** An engine's answer is checked against the port's schema and for text Postgres can store, so a bad answer is the engine's 502, never a 500. */
function checkedAnswer<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new AiEngineError(`the ${what} does not have the expected shape`, true);
  const unstorable = findUnstorableText(parsed.data);
  if (unstorable) throw new AiEngineError(`the ${what} holds text that cannot be stored (${unstorable})`, true);
  return parsed.data;
}

interface Research {
  summary: ResearchSummary;
  /** What the message step is given: the summary, or the caller's own text as they wrote it. */
  forMessage: ResearchSummary | string;
  profile: ProspectProfile;
  source: string;
}

async function researchStep(ctx: CoreDeps, plan: Plan, remainingMs: () => number, researchTimeoutMs: number): Promise<Research> {
  const { request } = plan;
  const productFacts = plan.product?.facts ?? null;
  const given = request.research_summary;
  if (given !== undefined) {
    // Not looked up and not summarised: the caller's research stands, shaped as the spec's object.
    return {
      summary: researchFromCallerText(given, productFacts),
      forMessage: given,
      profile: { ...urlOnlyProfile(request.prospect_url), source: 'caller' },
      source: 'caller',
    };
  }
  let found: ProspectProfile | null;
  try {
    found = await withinTime(Math.min(researchTimeoutMs, remainingMs()), (signal) => ctx.research.lookup(request.prospect_url, signal));
  } catch (err) {
    throw stepFailed('research', `the profile research provider (${ctx.research.name}) did not answer`, err);
  }
  // A provider that knows nothing of the profile is not a failure: the research is then written from the URL alone.
  const profile = found ?? urlOnlyProfile(request.prospect_url);
  let summary: ResearchSummary;
  try {
    const answer = await withinTime(remainingMs(), () =>
      ctx.ai.summariseResearch({ profile, product: productFacts, additionalResearch: request.additional_research?.trim() || null }),
    );
    summary = checkedAnswer(ResearchSummary, answer.value, 'research summary');
  } catch (err) {
    throw stepFailed('research', `the AI engine (${ctx.ai.name}) could not summarise the research`, err);
  }
  return { summary, forMessage: summary, profile, source: profile.source };
}

/** Research, message, then one transaction that pays for and stores it. Any failure gives the hold and the key back. */
async function produceMessage(ctx: CoreDeps, plan: Plan, t: { deadlineMs: number; researchTimeoutMs: number }): Promise<string> {
  const keyRef = { accountId: plan.accountId, key: plan.idempotencyKey };
  const deadline = Date.now() + t.deadlineMs;
  const remainingMs = () => Math.max(0, deadline - Date.now());
  try {
    const research = await researchStep(ctx, plan, remainingMs, t.researchTimeoutMs);
    const template = plan.request.template ?? {};
    let message: string;
    let engine: string;
    try {
      const answer = await withinTime(remainingMs(), () =>
        ctx.ai.writeMessage({
          profile: research.profile,
          research: research.forMessage,
          product: plan.product?.facts ?? null,
          template,
          sender: plan.sender,
          additionalResearch: plan.request.additional_research?.trim() || null,
        }),
      );
      // Surrounding blank lines are layout, not message; what is stored is what is counted.
      message = checkedAnswer(GeneratedMessage, { message: answer.value.message.trim() }, 'message').message;
      engine = answer.engine;
    } catch (err) {
      throw stepFailed('message', `the AI engine (${ctx.ai.name}) could not write the message`, err);
    }
    const body = await completeMessage(ctx, plan, research, message, engine, messageSettings(template).message_type);
    return body;
  } catch (err) {
    // The hold first: once the key is free a repeat may hold afresh under it.
    await giveHoldBack(ctx, keyRef);
    if (err instanceof AlreadyCompleted) return err.body;
    await giveKeyBack(ctx, keyRef);
    throw err;
  }
}

async function giveHoldBack(ctx: CoreDeps, keyRef: { accountId: string; key: string }): Promise<void> {
  try {
    await releaseCreditHold({ ctx, input: { accountId: keyRef.accountId, idempotencyKey: keyRef.key } });
  } catch (err) {
    // The hold then goes back when it expires (the account's next hold, or the minute sweep).
    ctx.log.error('api-full-request: could not release the credit hold', {
      account_id: keyRef.accountId,
      error: err instanceof Error ? err.message : String(err),
    });
  }
}

/** Another worker stored this key's message first (it took over after a lease ran out): its result is the answer. */
class AlreadyCompleted extends Error {
  constructor(readonly body: string) {
    super('the idempotency key was completed by another worker');
  }
}

async function completeMessage(ctx: CoreDeps, plan: Plan, research: Research, message: string, engine: string, messageType: string): Promise<string> {
  let row: { message_id: string; body: string; reload: boolean } | undefined;
  try {
    [row] = await sqlCall(
      () => ctx.db<{ message_id: string; body: string; reload: boolean }>`
        select * from sl_complete_message(
          ${plan.accountId}, ${plan.userId}, ${plan.idempotencyKey}, ${plan.request.prospect_url}, ${plan.product?.id ?? null},
          ${JSON.stringify(research.summary)}::text::jsonb, ${research.source}, ${message}, ${messageType},
          ${countWords(message)}, ${countCharacters(message)}, ${engine},
          ${plan.cost.research}, ${plan.cost.message})`,
    );
  } catch (err) {
    if (err instanceof AppError && err.code === 'insufficient_credits') {
      // This request's hold expired while it worked (and went back), and others spent the credits since:
      // report the whole cost and the balance now.
      const [account] = await ctx.db<{ credit_balance: number }>`select credit_balance from accounts where id = ${plan.accountId}`;
      throw notEnoughCredits(plan.cost, account?.credit_balance ?? 0);
    }
    const stored = await storedBody(ctx, plan);
    if (stored !== null) throw new AlreadyCompleted(stored);
    throw err;
  }
  if (!row) throw new Error('sl_complete_message returned no row');
  if (row.reload) startAfterWork(ctx, 'credit-reload', { accountId: plan.accountId });
  startAfterWork(ctx, 'webhook-delivery', { partnerAccountId: plan.accountId });
  return row.body;
}

/** The key's stored response, when another worker completed it; null otherwise (or when it cannot be read: the original error stands). */
async function storedBody(ctx: CoreDeps, plan: Plan): Promise<string | null> {
  try {
    const [row] = await ctx.db<{ response_body: string | null }>`
      select response_body from idempotent_requests
      where account_id = ${plan.accountId} and idempotency_key = ${plan.idempotencyKey} and state = 'completed'`;
    return row?.response_body ?? null;
  } catch {
    return null;
  }
}
