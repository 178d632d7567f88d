import { createWriteBehind, type WriteBehindHost } from '../drivers/write-behind.ts';

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

export function createUsageMeter(host: WriteBehindHost): UsageMeter {
  const counts = createWriteBehind<UsageCount>(host, {
    name: 'usage-meter',
    merge: (into, item) => {
      into.calls += item.calls;
    },
    write: (batch) => host.db`select sl_record_usage(${JSON.stringify(batch)}::text::jsonb)`,
  });
  return {
    count: (accountId, operation, calls = 1) => counts.add(`${accountId}|${operation}`, { account_id: accountId, operation, calls }),
    flush: counts.flush,
  };
}

declare module '../kernel/context.ts' {
  interface CoreDeps {
    /** Counts API calls and operations for api-usage-summary (account/usage-meter.ts). */
    usage: UsageMeter;
  }
}
