// Types only: the module (and its WASM) loads when the embedded database is opened, so a server
// on Postgres never holds it.
import type { PGlite, Transaction } from '@electric-sql/pglite';
import type { Database, Sql, SqlValue } from '@sightline/core';

type PgliteLike = PGlite | Transaction;

function toText(strings: TemplateStringsArray): string {
  return strings.reduce((acc, part, i) => (i === 0 ? part : `${acc}$${i}${part}`), '');
}

/**
 * PGlite runs each query synchronously on this thread and settles it as a microtask, so a loop of
 * queries (an operator command, an import, a sweep) never gives the event loop a turn: HTTP
 * requests, even ones that touch no data, wait until the loop ends. One macrotask turn before each
 * query lets pending I/O in between.
 */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function wrap(pg: PgliteLike, root: boolean): Sql & { exec(script: string): Promise<void> } {
  const run = async <T extends object>(strings: TemplateStringsArray, ...values: SqlValue[]): Promise<T[]> => {
    await turn();
    const result = await pg.query<T>(toText(strings), values);
    return result.rows;
  };
  return Object.assign(run, {
    begin: <T>(fn: (tx: Sql) => Promise<T>): Promise<T> => {
      if (root) return (pg as PGlite).transaction((tx) => fn(wrap(tx, false)));
      // Already inside a transaction: run inline (PGlite has one connection; savepoints are not needed
      // by any caller that nests).
      return fn(wrap(pg, false));
    },
    exec: async (script: string): Promise<void> => {
      await pg.exec(script);
    },
  });
}

/**
 * The embedded default: Postgres compiled to WASM, persisted in `dataDir` (or in memory when
 * `dataDir` is undefined, for tests). One connection; PGlite queues concurrent queries and
 * serialises transactions, which keeps its accounting exact.
 */
export async function openPglite(dataDir: string | undefined): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  // pg_trgm backs list-visitors' free-text search (migration 0011), as it does on a real server.
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
  const options = { extensions: { pg_trgm } };
  const pg = dataDir ? await PGlite.create(dataDir, options) : await PGlite.create(options);
  const sql = wrap(pg, true);
  return Object.assign(sql, {
    kind: 'pglite' as const,
    // In process: no connection to lose, so onListen runs once.
    listen: async (channel: string, onNotify: (payload: string) => void, onListen?: () => void) => {
      const unsubscribe = await pg.listen(channel, onNotify);
      onListen?.();
      return { unlisten: () => unsubscribe() };
    },
    close: () => pg.close(),
  });
}
