import { randomBytes } from 'node:crypto';
import { connectPostgres, type Database, migrate } from '@sightline/core';
import { loadSchema, openPglite } from '@sightline/host';
import postgres from 'postgres';
import { oldWayMigrations } from './history.ts';

export const usingPostgres = Boolean(process.env.DATABASE_URL);

export interface TestDatabase {
  db: Database;
  /** A postgres:// URL for this database (real Postgres only), e.g. for a Deno subprocess. */
  url: string | undefined;
  drop(): Promise<void>;
}

export interface OpenOptions {
  pool?: number;
  /**
   * A database migrated the old way (history.ts: the migrations as they were before the functions
   * had files of their own, from git) and stopped short of the migration named, for a test of what
   * that migration does to data when the current runner upgrades it. Throws where git history is
   * not at hand: such a test checks `oldWayMigrations()` first.
   */
  before?: string;
  /** Nothing applied: an empty database (to apply supabase/migrations by hand, say). */
  empty?: boolean;
}

/**
 * Each test file gets its own database so suites run in parallel without seeing each other:
 * a freshly created database on the DATABASE_URL server, or an in-memory PGlite, migrated by the
 * runner unless `before` or `empty` says otherwise.
 */
export async function openTestDatabase(opts: OpenOptions = {}): Promise<TestDatabase> {
  const t = await createDatabase(opts.pool);
  if (opts.empty) return t;
  if (opts.before) {
    const old = await oldWayMigrations();
    if (!old) throw new Error('the old-way migrations need git history (tests/support/history.ts)');
    const before = opts.before;
    await migrate(t.db, { migrations: old.filter((m) => m.name < before) });
  } else {
    await migrate(t.db, await loadSchema());
  }
  return t;
}

async function createDatabase(pool = 10): Promise<TestDatabase> {
  const base = process.env.DATABASE_URL;
  if (!base) {
    const db = await openPglite(undefined);
    return { db, url: undefined, drop: () => db.close() };
  }
  const name = `sl_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  const db = connectPostgres({ url: url.href, max: pool, prepare: true });
  return {
    db,
    url: url.href,
    async drop() {
      await db.close();
      const a = postgres(base, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}
