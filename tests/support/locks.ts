import type { Sql } from '@sightline/core';
import { until } from './wait.ts';

/**
 * Waits until a statement of this database whose text contains `fragment` is waiting for a lock
 * (real Postgres): how a test that forces an interleaving knows each side has reached its wait,
 * without sleeping.
 */
export async function untilWaitingForLock(db: Sql, fragment: string): Promise<void> {
  await until(`a statement with ${fragment} to wait for a lock`, async () => {
    const [row] = await db<{ n: number }>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()
        and position(${fragment} in query) > 0`;
    return (row?.n ?? 0) > 0;
  });
}
