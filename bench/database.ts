import type { Database } from '@sightline/core';
import postgres from 'postgres';
import { envForDatabase, type TestEnvOptions } from '../tests/support/app.ts';
import { openTestDatabase } from '../tests/support/db.ts';

/**
 * A throwaway, migrated database for one bench run, made the way each test file gets its own: a
 * fresh database on the DATABASE_URL server (dropped afterwards), or an in-memory PGlite.
 */
export async function openBenchDatabase(poolSize: number): Promise<{ db: Database; kind: string; url?: string; drop(): Promise<void> }> {
  const t = await openTestDatabase({ pool: poolSize });
  return { ...t, kind: t.url ? `Postgres (pool ${poolSize})` : 'PGlite (embedded, one connection)' };
}

/**
 * A throwaway database and the service's dependencies over it, composed as production composes
 * them (the test harness's envForDatabase), without an auth cache. Closing it drops the database.
 */
export async function openBenchService(poolSize: number, opts: TestEnvOptions = {}) {
  const t = await openBenchDatabase(poolSize);
  const env = await envForDatabase({ db: t.db, url: t.url, drop: t.drop }, { authCache: false, ...opts });
  return { db: t.db, kind: t.kind, url: t.url, deps: env.deps, close: env.close };
}

/**
 * A one-connection session on `url` whose every statement, those inside functions included, is
 * logged with its plan and run time by auto_explain; each plan reaches `onPlan` as the text of a
 * notice. Null where the role may not LOAD auto_explain (a superuser can). The caller ends it.
 */
export async function openExplainingSession(url: string, onPlan: (plan: string) => void): Promise<postgres.Sql | null> {
  const pg = postgres(url, {
    max: 1,
    onnotice: (n) => {
      if (n.message) onPlan(n.message);
    },
  });
  try {
    await pg.unsafe(`load 'auto_explain'`);
  } catch {
    await pg.end({ timeout: 5 });
    return null;
  }
  await pg.unsafe(
    'set auto_explain.log_min_duration = 0; set auto_explain.log_nested_statements = on; set auto_explain.log_analyze = on; set auto_explain.log_buffers = on; set client_min_messages = log',
  );
  return pg;
}
