import type { CompanyCharacteristics } from '../ai/engine.ts';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import type { Sql } from '../kernel/sql.ts';
import { type ScoringIcp, type ScoringSubject, scoreIdentification } from './score-identification.ts';

declare module '../kernel/after-work.ts' {
  interface AfterWorkKinds {
    /** The scoring worker (scoreIdentifications), after identifications settled or an ICP became active. */
    'icp-scoring': undefined;
  }
}

/** Identifications one transaction scores: each is scored against every active ICP of its account. */
const IDENTIFICATIONS_PER_BATCH = 200;

export interface ScoringReport {
  /** New identifications scored (or found with no active ICP to score against). */
  scored: number;
  /** Identifications scored against a newly active ICP. */
  backfilled: number;
  /** Score rows written. */
  scores: number;
  batches: number;
}

interface Subject extends ScoringSubject {
  id: string;
  account_id: string;
}

interface ActiveIcp extends ScoringIcp {
  account_id: string;
}

interface ScoreRow {
  identification_id: string;
  icp_id: string;
  score: number;
  qualified: boolean;
  ai_summary: string;
}

function subjectOf(row: Subject): ScoringSubject {
  return {
    identification_type: row.identification_type,
    industry: row.industry,
    employee_range: row.employee_range,
    employees: row.employees,
    country: row.country,
    location: row.location,
    job_title: row.job_title,
  };
}

function scoreAll(subjects: readonly Subject[], icps: readonly ActiveIcp[]): ScoreRow[] {
  const rows: ScoreRow[] = [];
  for (const s of subjects) {
    for (const icp of icps) {
      if (icp.account_id !== s.account_id) continue;
      const r = scoreIdentification(icp, subjectOf(s));
      rows.push({ identification_id: s.id, icp_id: icp.id, score: r.score, qualified: r.qualified, ai_summary: r.ai_summary });
    }
  }
  // One order for every writer, so two transactions upserting overlapping rows cannot deadlock.
  return rows.sort((a, b) =>
    a.identification_id === b.identification_id ? (a.icp_id < b.icp_id ? -1 : 1) : a.identification_id < b.identification_id ? -1 : 1,
  );
}

/**
 * Writes the scores; a score that qualifies where it did not before (new, or below the threshold
 * until now) is the `icp_qualified` signal for the account's integrations, once per identification
 * and ICP, in the same statement.
 */
async function storeScores(tx: Sql, rows: readonly ScoreRow[]): Promise<void> {
  if (!rows.length) return;
  await tx`
    with s as (
      select * from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb)
        as s (identification_id uuid, icp_id uuid, score smallint, qualified boolean, ai_summary text)
    ),
    before as (
      select p.identification_id, p.icp_id from icp_scores p join s using (identification_id, icp_id) where p.qualified
    ),
    stored as (
      insert into icp_scores (identification_id, icp_id, score, qualified, ai_summary, scored_at, website_id, listed_at)
      select s.identification_id, s.icp_id, s.score, s.qualified, s.ai_summary, now(), i.website_id, i.created_at
      from s join identifications i on i.id = s.identification_id
      order by s.identification_id, s.icp_id
      on conflict (identification_id, icp_id) do update
        set score = excluded.score, qualified = excluded.qualified, ai_summary = excluded.ai_summary, scored_at = excluded.scored_at
      returning identification_id, icp_id, score, qualified
    )
    select count(sl_emit_signal(i.website_id, i.ip, 'icp_qualified', jsonb_build_object('name', c.name, 'score', t.score)))
    from stored t
    join identifications i on i.id = t.identification_id
    join icps c on c.id = t.icp_id
    where t.qualified and not exists (select 1 from before b where b.identification_id = t.identification_id and b.icp_id = t.icp_id)`;
}

/**
 * New identifications: one transaction claims up to `size` identified and unscored rows (SKIP
 * LOCKED, so workers share the queue), scores each against the active ICPs of its account
 * (website → key → account), writes the scores and marks the rows scored. The rows are locked FOR NO
 * KEY UPDATE and the ICPs FOR KEY SHARE: a backfill writing scores of the same rows is not blocked
 * (its foreign-key checks take KEY SHARE), and an ICP cannot be deleted under the batch.
 */
async function scoreNewBatch(ctx: CoreDeps, size: number): Promise<{ scored: number; scores: number }> {
  return ctx.db.begin(async (tx) => {
    const subjects = await tx<Subject>`
      select i.id, k.account_id, i.identification_type, i.industry, i.employee_range, i.employees, i.country, i.location,
        i.person_linkedin_title as job_title
      from identifications i join websites w on w.id = i.website_id join api_keys k on k.id = w.api_key_id
      where i.status = 'identified' and i.scored_at is null
      order by i.identified_at
      limit ${size}
      for no key update of i skip locked`;
    if (!subjects.length) return { scored: 0, scores: 0 };
    const accounts = [...new Set(subjects.map((s) => s.account_id))];
    const icps = await tx<ActiveIcp>`
      select id, account_id, name, industry_focus, job_titles, company_characteristics, qualify_threshold
      from icps
      where workflow_status = 'active' and account_id in (select jsonb_array_elements_text(${JSON.stringify(accounts)}::text::jsonb)::uuid)
      for key share`;
    const rows = scoreAll(subjects, icps);
    await storeScores(tx, rows);
    await tx`update identifications set scored_at = now()
             where id in (select jsonb_array_elements_text(${JSON.stringify(subjects.map((s) => s.id))}::text::jsonb)::uuid)`;
    return { scored: subjects.length, scores: rows.length };
  });
}

interface BackfillIcp {
  id: string;
  account_id: string;
  backfill_after: string | null;
  name: string;
  industry_focus: string[];
  job_titles: string[];
  company_characteristics: CompanyCharacteristics;
  qualify_threshold: number;
}

/**
 * The backfill after an activation: one transaction locks one ICP with scoring to catch up on
 * (SKIP LOCKED: each worker takes its own), scores the next `size` identified identifications of
 * its account in id order after `backfill_after`, and advances the mark, or clears it when the
 * walk is done. A pause clears the mark (sl_icp_action) and waits for the lock, so a batch never
 * lands on a paused ICP; a later activation starts the walk again. Null when nothing is pending.
 */
async function backfillBatch(ctx: CoreDeps, size: number): Promise<{ scored: number; scores: number } | null> {
  return ctx.db.begin(async (tx) => {
    const [icp] = await tx<BackfillIcp>`
      select id, account_id, backfill_after, name, industry_focus, job_titles, company_characteristics, qualify_threshold
      from icps where backfill_pending
      order by updated_at, id
      limit 1
      for update skip locked`;
    if (!icp) return null;
    const subjects = await tx<Subject>`
      select i.id, ${icp.account_id}::uuid as account_id, i.identification_type, i.industry, i.employee_range, i.employees,
        i.country, i.location, i.person_linkedin_title as job_title
      from identifications i
      where i.status = 'identified'
        and i.website_id in (select w.id from websites w join api_keys k on k.id = w.api_key_id where k.account_id = ${icp.account_id}::uuid)
        and (${icp.backfill_after}::uuid is null or i.id > ${icp.backfill_after}::uuid)
      order by i.id
      limit ${size}`;
    const active: ActiveIcp = { ...icp };
    const rows = scoreAll(subjects, [active]);
    await storeScores(tx, rows);
    const last = subjects[subjects.length - 1];
    if (subjects.length < size || !last) {
      await tx`update icps set backfill_pending = false, backfill_after = null where id = ${icp.id}::uuid`;
    } else {
      await tx`update icps set backfill_after = ${last.id}::uuid where id = ${icp.id}::uuid`;
    }
    return { scored: subjects.length, scores: rows.length };
  });
}

/**
 * The scoring worker (spec: each identification is scored 0–100 against each active ICP of its
 * website's account; the rules are in score-identification.ts). Two queues, each worked in bounded
 * transactions until empty or `maxBatches`: identifications that landed since the last run, then
 * the ICPs activated since, each scored against every identification its account has. Scores are
 * upserted, so a row scored by both (it landed while its ICP was being backfilled) is written
 * twice with the same result. Run by the scheduled sweep, and started as after-work
 * (`icp-scoring`) after identifications settle and after an activation.
 */
export async function scoreIdentifications({ ctx, input }: VerbArgs<{ batchSize?: number; maxBatches?: number }, CoreDeps>): Promise<ScoringReport> {
  const size = input.batchSize ?? IDENTIFICATIONS_PER_BATCH;
  const maxBatches = input.maxBatches ?? 50;
  const report: ScoringReport = { scored: 0, backfilled: 0, scores: 0, batches: 0 };
  for (let i = 0; i < maxBatches; i++) {
    const r = await scoreNewBatch(ctx, size);
    if (r.scored) report.batches++;
    report.scored += r.scored;
    report.scores += r.scores;
    if (r.scored < size) break;
  }
  for (let i = 0; i < maxBatches; i++) {
    const r = await backfillBatch(ctx, size);
    if (!r) break;
    report.batches++;
    report.backfilled += r.scored;
    report.scores += r.scores;
  }
  return report;
}
