import { AiEngineError, IcpDraft, type ProductFacts } from '../ai/engine.ts';
import { startAfterWork } from '../kernel/after-work.ts';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { findUnstorableText } from '../kernel/storable-text.ts';
import { ICP_FIELD_NAMES } from './schemas.ts';

declare module '../kernel/after-work.ts' {
  interface AfterWorkKinds {
    /** The generation worker (generateIcps), after a create or a regenerate committed. */
    'icp-generation': undefined;
  }
}

/** ICPs one claim takes: each is one engine call, run together. */
const ICPS_PER_CLAIM = 8;
/** Longer than an engine call with its own timeout, repair attempt and retries may take. */
const LEASE_MS = 5 * 60_000;
/** Attempts before a retryable failure is settled as failed (retried 1, 5 and 30 minutes apart). */
export const MAX_GENERATION_ATTEMPTS = 4;
/** What is kept of an engine's error message as the ICP's failure_reason. */
const REASON_LENGTH = 1000;

export interface IcpGenerationReport {
  generated: number;
  /** Failed attempts scheduled for another try. */
  retrying: number;
  /** Settled as failed: a failure no retry cures, or the last attempt. */
  failed: number;
  claims: number;
}

interface Claimed {
  id: string;
  attempt: number;
}

interface Loaded {
  account_id: string;
  given_fields: string[];
  name: string;
  description: string;
  job_titles: string[];
  pain_points: string[];
  value_drivers: string[];
  industry_focus: string[];
  company_characteristics: Record<string, unknown>;
  product: ProductFacts;
}

type Outcome = 'generated' | 'retrying' | 'failed' | 'gone';

/** The fields the caller gave, as the engine's context (the draft must agree with them). */
function givenOf(icp: Loaded): Partial<IcpDraft> {
  const given: Record<string, unknown> = {};
  for (const name of ICP_FIELD_NAMES) if (icp.given_fields.includes(name)) given[name] = icp[name];
  return given as Partial<IcpDraft>;
}

/** Asks the engine for the fields the caller left out, and checks the draft can be stored as it is. */
async function draftFor(ctx: CoreDeps, icp: Loaded): Promise<{ draft: IcpDraft; engine: string }> {
  const given = givenOf(icp);
  // The caller gave every field: nothing to ask an engine for.
  if (ICP_FIELD_NAMES.every((name) => icp.given_fields.includes(name))) return { draft: IcpDraft.parse(given), engine: 'caller' };
  const answer = await ctx.ai.draftIcp({ product: icp.product, given });
  const checked = IcpDraft.safeParse(answer.value);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new AiEngineError(
      `${answer.engine} drafted an ICP that does not validate (${issue?.path.join('.') || 'draft'}: ${issue?.message ?? 'invalid'})`,
      true,
    );
  }
  // Postgres refuses NUL and unpaired surrogates: such a draft is the engine's failure, not a stuck ICP.
  const unstorable = findUnstorableText(checked.data);
  if (unstorable) throw new AiEngineError(`${answer.engine} drafted an ICP with text that cannot be stored (${unstorable})`, true);
  return { draft: checked.data, engine: answer.engine };
}

async function failAttempt(ctx: CoreDeps, claimed: Claimed, accountId: string, reason: string, retryable: boolean) {
  ctx.log.warn('ICP generation attempt failed', { icp: claimed.id, attempt: claimed.attempt, retryable, error: reason });
  const [row] = await ctx.db<{ outcome: 'retrying' | 'failed' | null }>`
    select sl_fail_icp_generation(${claimed.id}::uuid, ${reason}, ${retryable}, ${MAX_GENERATION_ATTEMPTS}) as outcome`;
  return { outcome: row?.outcome ?? ('gone' as const), accountId };
}

async function generateOne(ctx: CoreDeps, claimed: Claimed): Promise<{ outcome: Outcome; accountId: string | null }> {
  const [icp] = await ctx.db<Loaded>`
    select i.account_id, i.given_fields, i.name, i.description, i.job_titles, i.pain_points, i.value_drivers, i.industry_focus,
      i.company_characteristics,
      jsonb_build_object('name', p.name, 'url', p.url, 'description', p.description,
        'value_propositions', to_jsonb(p.value_propositions), 'target_customers', to_jsonb(p.target_customers)) as product
    from icps i join products p on p.id = i.product_id
    where i.id = ${claimed.id}::uuid and i.workflow_status = 'generating'`;
  // Deleted since the claim: nothing to do.
  if (!icp) return { outcome: 'gone', accountId: null };
  // Attempts are counted at the claim, so workers that died mid-attempt (a killed process, an
  // isolate past its wall-clock limit) use them up too: past the limit the ICP is failed, not retried forever.
  if (claimed.attempt > MAX_GENERATION_ATTEMPTS) {
    return failAttempt(
      ctx,
      claimed,
      icp.account_id,
      `no attempt finished in ${MAX_GENERATION_ATTEMPTS} tries (each worker stopped mid-attempt)`,
      false,
    );
  }
  try {
    const { draft, engine } = await draftFor(ctx, icp);
    const [row] = await ctx.db<{ settled: boolean }>`
      select sl_settle_icp_generation(${claimed.id}::uuid, ${JSON.stringify(draft)}::text::jsonb, ${engine}) as settled`;
    return { outcome: row?.settled ? 'generated' : 'gone', accountId: icp.account_id };
  } catch (err) {
    // An unknown failure may be passing (a network blip); the attempt limit bounds the retries.
    const retryable = err instanceof AiEngineError ? err.retryable : true;
    const reason = (err instanceof Error ? err.message : String(err)).slice(0, REASON_LENGTH) || 'the engine failed';
    return failAttempt(ctx, claimed, icp.account_id, reason, retryable);
  }
}

/**
 * The generation worker: ICPs waiting in `generating` are drafted by the AI engine from their
 * product, off the request path. Claims are bounded, leased and taken with SKIP LOCKED
 * (`sl_claim_icp_generations`, the attempt counted at the claim), so replicas, the after-work
 * (`icp-generation`) a create starts and the scheduled sweep share the work, and a worker that died is taken over once its
 * lease runs out. A draft fills only the fields the caller left out (`sl_settle_icp_generation`);
 * a failure is retried 1, 5 and 30 minutes later while it may pass and attempts remain, else the
 * ICP ends `failed` with the reason (`sl_fail_icp_generation`). Either way the account hears of it
 * (icp.generated, icp.generation_failed), delivered as after-work (`webhook-delivery`).
 */
export async function generateIcps({
  ctx,
  input,
}: VerbArgs<{ batchSize?: number; maxClaims?: number; leaseMs?: number }, CoreDeps>): Promise<IcpGenerationReport> {
  const report: IcpGenerationReport = { generated: 0, retrying: 0, failed: 0, claims: 0 };
  for (let i = 0; i < (input.maxClaims ?? 20); i++) {
    const claimed = await ctx.db<Claimed>`
      select * from sl_claim_icp_generations(${input.batchSize ?? ICPS_PER_CLAIM}, ${input.leaseMs ?? LEASE_MS})`;
    if (!claimed.length) break;
    report.claims++;
    const accounts = new Set<string>();
    const results = await Promise.all(claimed.map((c) => generateOne(ctx, c)));
    for (const r of results) {
      if (r.outcome === 'gone') continue;
      report[r.outcome]++;
      if (r.accountId && r.outcome !== 'retrying') accounts.add(r.accountId);
    }
    for (const accountId of accounts) startAfterWork(ctx, 'webhook-delivery', { partnerAccountId: accountId });
  }
  return report;
}
