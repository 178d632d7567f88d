import type { Database, Sql } from '../kernel/sql.ts';
import { CREATE_DEFINITIONS_TABLE, type Definition, definitionRunner, requiredDefinitions } from './schema-definitions.ts';

export interface Migration {
  name: string;
  sql: string;
}

/**
 * What `migrate` applies: the versioned migrations (tables, columns, indexes, data) and the
 * definitions (every SQL function, trigger and view, once, in its current form: schema-definitions.ts).
 */
export interface Schema {
  migrations: Migration[];
  /**
   * Omitted: the versioned migrations alone, which is how a database was built before the
   * definitions had files of their own (tests build one that way to prove the upgrade).
   */
  definitions?: Definition[];
}

/**
 * Applies forward-only migrations in name order, each exactly once, then re-applies each definition
 * whose text changed (a checksum), all in one transaction. A migration that needs a function before
 * the definitions are applied (a CHECK or a generated column calls it) names its file in a
 * `-- requires: functions/<area>/<name>.sql` line; that file is applied just before it.
 * An advisory lock makes concurrent starts (two replicas) safe. Returns the migrations and
 * definition files applied.
 */
export async function migrate(db: Database, schema: Schema): Promise<string[]> {
  const applied: string[] = [];
  await db.exec(`create table if not exists schema_migrations (
    name text primary key, applied_at timestamptz not null default now())`);
  if (schema.definitions) await db.exec(CREATE_DEFINITIONS_TABLE);
  const sorted = [...schema.migrations].sort((a, b) => a.name.localeCompare(b.name));
  await db.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(7311995001)`;
    const runner = schema.definitions ? await definitionRunner(withExec(tx, db), schema.definitions) : undefined;
    const done = new Set((await tx<{ name: string }>`select name from schema_migrations`).map((r) => r.name));
    for (const m of sorted) {
      if (done.has(m.name)) continue;
      if (runner) for (const path of requiredDefinitions(m.sql)) await runner.ensure(path);
      await execIn(tx, db, m.sql);
      await tx`insert into schema_migrations (name) values (${m.name})`;
      applied.push(m.name);
    }
    if (runner) applied.push(...(await runner.sync()));
  });
  return applied;
}

/** Transactions created by adapters carry an `exec` so scripts run inside them. */
type ExecCapable = Sql & { exec?: (script: string) => Promise<void> };

function withExec(tx: ExecCapable, db: Database): Sql & { exec(script: string): Promise<void> } {
  const exec = tx.exec ? tx.exec.bind(tx) : (script: string) => db.exec(script);
  return Object.assign(tx, { exec });
}

async function execIn(tx: ExecCapable, db: Database, script: string): Promise<void> {
  if (tx.exec) return tx.exec(script);
  return db.exec(script);
}

/**
 * Errors that mean the database cannot be reached right now (not that a statement was wrong): the
 * socket's own failures and postgres.js's connection codes, and the server's connection-exception
 * class (08) and shutdown / starting-up states (57P01–57P03). The HTTP layer answers these 503 with
 * Retry-After, since the same request will succeed once the database is back.
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

export function isDatabaseUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'));
}
