import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { connectPostgres, migrate, type Database } from '@sightline/core';
import { loadMigrations, openPglite } from '@sightline/host';

/**
 * A throwaway, migrated database for one bench run: a fresh database on the DATABASE_URL server
 * (dropped afterwards), or an in-memory PGlite.
 */
export async function openBenchDatabase(poolSize: number): Promise<{ db: Database; kind: string; url?: string; drop(): Promise<void> }> {
  const base = process.env.DATABASE_URL;
  if (!base) {
    const db = await openPglite(undefined);
    await migrate(db, await loadMigrations());
    return { db, kind: 'PGlite (embedded, one connection)', drop: () => db.close() };
  }
  const name = `sl_bench_${randomBytes(4).toString('hex')}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  const db = connectPostgres({ url: url.href, max: poolSize, prepare: true });
  await migrate(db, await loadMigrations());
  return {
    db,
    kind: `Postgres (pool ${poolSize})`,
    url: url.href,
    async drop() {
      await db.close();
      const a = postgres(base, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}
