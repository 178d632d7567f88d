import type { VerbArgs } from '../kernel/context.ts';
import type { CompanyImportRow, ImportSummary, RangeImportRow } from './importers.ts';
import type { RangeKind } from './local-data.ts';

const BATCH = 5000;

export interface ImportResult {
  read: number;
  kept: number;
  rejected: number;
  inserted: number;
  rejected_samples: string[];
}

/**
 * Writes parsed feed rows to Postgres in batches (one statement per batch, JSON in, set-based
 * insert; duplicates are skipped), reports progress, then makes the new data visible.
 */
export async function storeRanges({
  ctx,
  input,
}: VerbArgs<{
  kind: RangeKind;
  parsed: ImportSummary<RangeImportRow>;
  source: string;
  onProgress?: (done: number, total: number) => void;
}>): Promise<ImportResult> {
  const inserted = await inBatches(input.parsed.rows, input.onProgress, async (rows) => {
    const batch = rows.map((r) => ({ network: r.cidr, provider: r.provider }));
    const [r] = await ctx.db<{ n: number }>`
      with ins as (
        insert into ip_ranges (network, kind, provider, source)
        select network(x.network::inet), ${input.kind}, x.provider, ${input.source}
        from jsonb_to_recordset(${JSON.stringify(batch)}::text::jsonb) as x(network text, provider text)
        on conflict (network, kind) do nothing
        returning 1
      ) select count(*)::int as n from ins`;
    return r?.n ?? 0;
  });
  await ctx.ip?.reload?.();
  return summary(input.parsed, inserted);
}

export async function storeCompanies({
  ctx,
  input,
}: VerbArgs<{ parsed: ImportSummary<CompanyImportRow>; onProgress?: (done: number, total: number) => void }>): Promise<ImportResult> {
  const inserted = await inBatches(input.parsed.rows, input.onProgress, async (batch) => {
    const [r] = await ctx.db<{ n: number }>`
      with ins as (
        insert into ip_companies (network, domain, company_name, confidence, source)
        select network(x.cidr::inet), x.domain, x.company_name, x.confidence, 'import'
        from jsonb_to_recordset(${JSON.stringify(batch)}::text::jsonb) as x(cidr text, domain text, company_name text, confidence real)
        -- An operator's import replaces whatever was there, learned or imported.
        on conflict (network) do update set domain = excluded.domain, company_name = excluded.company_name,
          confidence = excluded.confidence, source = 'import', updated_at = now()
        returning 1
      ) select count(*)::int as n from ins`;
    return r?.n ?? 0;
  });
  await ctx.ip?.reload?.();
  return summary(input.parsed, inserted);
}

/** Runs `insert` on successive slices of `rows`, reporting progress; the total it inserted. */
async function inBatches<T>(
  rows: T[],
  onProgress: ((done: number, total: number) => void) | undefined,
  insert: (batch: T[]) => Promise<number>,
): Promise<number> {
  let inserted = 0;
  for (let i = 0; i < rows.length; i += BATCH) {
    inserted += await insert(rows.slice(i, i + BATCH));
    onProgress?.(Math.min(i + BATCH, rows.length), rows.length);
  }
  return inserted;
}

function summary<T>(p: ImportSummary<T>, inserted: number): ImportResult {
  return { read: p.read, kept: p.kept, rejected: p.rejected, inserted, rejected_samples: p.rejectedSamples };
}
