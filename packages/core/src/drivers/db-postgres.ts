import postgres from 'postgres';
import type { Database, Sql, SqlValue } from '../kernel/sql.ts';

export interface PostgresOptions {
  url: string;
  /** Connections in the pool. */
  max: number;
  /** Named prepared statements; turn off behind a transaction pooler (PgBouncer, Supavisor :6543). */
  prepare: boolean;
}

type PgSql = postgres.Sql | postgres.TransactionSql;

function wrap(pg: PgSql): Sql & { exec(script: string): Promise<void> } {
  const run = <T extends object>(strings: TemplateStringsArray, ...values: SqlValue[]): Promise<T[]> =>
    pg(strings, ...(values as postgres.ParameterOrFragment<never>[])) as unknown as Promise<T[]>;
  return Object.assign(run, {
    // postgres.js reads a cursor on one reserved connection (in a transaction, its own), a portal executed `size` rows at a time.
    cursor:
      <T extends object>(size: number) =>
      (strings: TemplateStringsArray, ...values: SqlValue[]): AsyncIterable<T[]> =>
        pg(strings, ...(values as postgres.ParameterOrFragment<never>[])).cursor(size) as unknown as AsyncIterable<T[]>,
    begin: <T>(fn: (tx: Sql) => Promise<T>): Promise<T> => {
      if (!('begin' in pg)) {
        // Nested transaction: a savepoint keeps the caller's transaction intact on failure.
        return (pg as postgres.TransactionSql).savepoint((sp) => fn(wrap(sp))) as Promise<T>;
      }
      return (pg as postgres.Sql).begin((tx) => fn(wrap(tx))) as Promise<T>;
    },
    exec: async (script: string): Promise<void> => {
      await pg.unsafe(script);
    },
  });
}

/** A Database on a real Postgres server through postgres.js. */
export function connectPostgres(opts: PostgresOptions): Database {
  const pg = postgres(opts.url, {
    max: opts.max,
    prepare: opts.prepare,
    onnotice: () => {},
    // Keep connections from piling up across edge-function instances.
    idle_timeout: 20,
    connect_timeout: 10,
    // While the database is away, a query waiting for a connection fails only when a reconnect
    // attempt does; postgres.js's own backoff grows to 20 s between attempts, so requests hung for
    // that long. Capped at 1 s, each connection retries every second: waiting requests fail at the
    // next attempts (a 500 the caller can retry; within 5 s under the test's load) and the pool is
    // back within a second of the database. (tests/database-outage.test.ts)
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
  });
  const sql = wrap(pg);
  return Object.assign(sql, {
    kind: 'postgres' as const,
    // postgres.js listens on one dedicated connection (outside the pool), reconnects with backoff
    // and calls onListen again each time.
    listen: async (channel: string, onNotify: (payload: string) => void, onListen?: () => void) => {
      const meta = await pg.listen(channel, onNotify, onListen);
      return { unlisten: () => meta.unlisten() };
    },
    close: () => pg.end({ timeout: 5 }),
  });
}
