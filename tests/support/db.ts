import { randomBytes } from 'node:crypto';
import { connectPostgres, type Database, migrate } from '@sightline/core';
import { loadMigrations, openPglite } from '@sightline/host';
import postgres from 'postgres';

export const usingPostgres = Boolean(process.env.DATABASE_URL);

export interface TestDatabase {
  db: Database;
  /** A postgres:// URL for this database (real Postgres only), e.g. for a Deno subprocess. */
  url: string | undefined;
  drop(): Promise<void>;
}

/**
 * Each test file gets its own database so suites run in parallel without seeing each other:
 * a freshly created database on the DATABASE_URL server, or an in-memory PGlite. `before` stops
 * the migrations short of the one it names, for a test of what that migration does to data.
 */
export async function openTestDatabase(opts: { pool?: number; before?: string } = {}): Promise<TestDatabase> {
  const migrations = (await loadMigrations()).filter((m) => !opts.before || m.name < opts.before);
  const base = process.env.DATABASE_URL;
  if (!base) {
    const db = await openPglite(undefined);
    await migrate(db, migrations);
    return { db, url: undefined, drop: () => db.close() };
  }
  const name = `sl_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  const db = connectPostgres({ url: url.href, max: opts.pool ?? 10, prepare: true });
  await migrate(db, migrations);
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
