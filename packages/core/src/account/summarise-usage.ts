import { z } from '@hono/zod-openapi';
import type { VerbArgs } from '../kernel/context.ts';
import { Timestamp, whenGiven } from '../kernel/schemas.ts';

export const USAGE_PERIODS = ['day', 'week', 'month', 'all'] as const;
/** The newest transactions a summary lists; the totals count every one in the period. */
export const MAX_SUMMARY_TRANSACTIONS = 100;
/** Operations every summary names, 0 when none happened (the spec's keys). */
const ALWAYS_SHOWN = ['research', 'message', 'connect'] as const;
const PERIOD_RULE = 'must be one of day, week, month, all';

export const UsageSummaryInput = z
  .object({
    // A string first, so a missing period reads "period is required" rather than "must be one of".
    period: z
      .string(whenGiven(PERIOD_RULE))
      .pipe(z.enum(USAGE_PERIODS, PERIOD_RULE))
      .openapi({
        type: 'string',
        enum: [...USAGE_PERIODS],
        description:
          'Calendar periods in UTC, up to now: `day` since 00:00 today, `week` since 00:00 on Monday (ISO week), `month` since 00:00 on the 1st, `all` since the account began',
      }),
  })
  .strict()
  .openapi('UsageSummaryRequest');
export type UsageSummaryInput = z.infer<typeof UsageSummaryInput>;

export const CreditTransaction = z
  .object({
    id: z.string(),
    type: z
      .enum(['debit', 'grant', 'reload'])
      .openapi({ description: '`debit` spends credits; `grant` (operator) and `reload` (auto-reload) add them' }),
    amount: z.number().int().openapi({ description: 'Credits, always positive; `type` says which way' }),
    operation: z
      .string()
      .openapi({ description: 'What a debit paid for (research, message, ip-to-company, ...); `grant` or `auto_reload` otherwise' }),
    created_at: Timestamp,
  })
  .openapi('CreditTransaction');

export const UsageSummary = z
  .object({
    period: z.enum(USAGE_PERIODS),
    since: Timestamp.nullable().openapi({ description: 'Start of the period (UTC); null for `all`' }),
    credits_used: z.number().int().openapi({ description: 'Credits debited in the period' }),
    api_calls: z.number().int().openapi({ description: 'Authenticated API calls in the period, this one included' }),
    by_operation: z.record(z.string(), z.number().int()).openapi({
      description:
        'How many times each operation was done in the period: research, message and connect always (0 when none), and every other operation done or paid for (ip-to-company, ip-to-best-fit, create_icp, ...)',
    }),
    transactions: z
      .array(CreditTransaction)
      .openapi({ description: `The period's credit transactions, newest first, at most ${MAX_SUMMARY_TRANSACTIONS}` }),
  })
  .openapi('UsageSummary');
export type UsageSummary = z.infer<typeof UsageSummary>;

/**
 * api-usage-summary. Periods are calendar periods in UTC, because usage is counted per UTC day
 * (usage_daily): `day`, `week` and `month` start at 00:00 UTC of today, of this ISO week's Monday and
 * of the 1st, so counts and credits cover exactly the same span. The caller's own calls counted in
 * this process so far are written first, so the summary includes them (this call too).
 */
export async function summariseUsage({ ctx, input }: VerbArgs<UsageSummaryInput & { accountId: string }>): Promise<UsageSummary> {
  await ctx.usage.flush();
  const unit = input.period === 'all' ? null : input.period;
  // The database's clock decides where the period starts, as it stamps usage days and transactions.
  const since =
    unit === null
      ? null
      : ((
          await ctx.db<{ since: string }>`
            select sl_iso(date_trunc(${unit}, now() at time zone 'UTC') at time zone 'UTC') as since`
        )[0]?.since ?? null);
  const [counts, debits, transactions] = await Promise.all([
    ctx.db<{ operation: string; calls: string }>`
      select operation, sum(calls)::text as calls from usage_daily
      where account_id = ${input.accountId} and (${since}::timestamptz is null or day >= (${since}::timestamptz at time zone 'UTC')::date)
      group by operation`,
    ctx.db<{ operation: string; credits: string; debits: string }>`
      select operation, sum(amount)::text as credits, count(*)::text as debits from credit_transactions
      where account_id = ${input.accountId} and type = 'debit' and (${since}::timestamptz is null or created_at >= ${since}::timestamptz)
      group by operation`,
    ctx.db<{ id: string; type: 'debit' | 'grant' | 'reload'; amount: number; operation: string; created_at: string }>`
      select id, type, amount, operation, sl_iso(created_at) as created_at from credit_transactions
      where account_id = ${input.accountId} and (${since}::timestamptz is null or created_at >= ${since}::timestamptz)
      order by created_at desc, id desc
      limit ${MAX_SUMMARY_TRANSACTIONS}`,
  ]);
  let apiCalls = 0;
  const byOperation: Record<string, number> = Object.fromEntries(ALWAYS_SHOWN.map((op) => [op, 0]));
  const counted = new Set<string>();
  for (const c of counts) {
    if (c.operation === 'api_call') apiCalls = Number(c.calls);
    else {
      byOperation[c.operation] = Number(c.calls);
      counted.add(c.operation);
    }
  }
  // An operation that was paid for but never counted (none today: every charged operation is
  // metered) still shows, by its number of debits, so by_operation never hides a cost.
  for (const d of debits) if (!counted.has(d.operation)) byOperation[d.operation] = Number(d.debits);
  return {
    period: input.period,
    since,
    credits_used: debits.reduce((sum, d) => sum + Number(d.credits), 0),
    api_calls: apiCalls,
    by_operation: byOperation,
    transactions,
  };
}
