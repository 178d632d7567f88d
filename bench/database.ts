import type { Database } from '@sightline/core';
import { openTestDatabase } from '../tests/support/db.ts';

/**
 * A throwaway, migrated database for one bench run, made the way each test file gets its own: a
 * fresh database on the DATABASE_URL server (dropped afterwards), or an in-memory PGlite.
 */
export async function openBenchDatabase(poolSize: number): Promise<{ db: Database; kind: string; url?: string; drop(): Promise<void> }> {
  const t = await openTestDatabase({ pool: poolSize });
  return { ...t, kind: t.url ? `Postgres (pool ${poolSize})` : 'PGlite (embedded, one connection)' };
}
