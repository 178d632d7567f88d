import type { Logger } from '../context.ts';
import type { Sql } from '../db.ts';
import { createWriteBehind } from '../write-behind.ts';

/**
 * Counts an account's API calls and operations for api-usage-summary without a database write on
 * the request path: counts gather in memory (write-behind.ts) and one statement (`sl_record_usage`)
 * adds them a moment later. Usage figures are a report, not a ledger — credits are debited in the
 * same transaction as the work they pay for, never through here.
 */
export interface UsageMeter {
  count(accountId: string, operation: string, calls?: number): void;
  /** Writes what has been counted so far (a reader of its own usage calls this first). */
  flush(): Promise<void>;
}

interface UsageCount {
  account_id: string;
  operation: string;
  calls: number;
}

export function createUsageMeter(opts: {
  db: Sql;
  log: Logger;
  background: (name: string, task: () => Promise<unknown>) => void;
  flushAfterMs?: number;
}): UsageMeter {
  const counts = createWriteBehind<UsageCount>({
    name: 'usage-meter',
    merge: (into, item) => {
      into.calls += item.calls;
    },
    write: (batch) => opts.db`select sl_record_usage(${JSON.stringify(batch)}::text::jsonb)`,
    background: opts.background,
    log: opts.log,
    ...(opts.flushAfterMs !== undefined ? { flushAfterMs: opts.flushAfterMs } : {}),
  });
  return {
    count: (accountId, operation, calls = 1) => counts.add(`${accountId}|${operation}`, { account_id: accountId, operation, calls }),
    flush: counts.flush,
  };
}
