// Types only: the module (and its WASM) loads when the embedded database is opened, so a server
// on Postgres never holds it.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import type { Database, Sql, SqlValue } from '@sightline/core';

type PgliteLike = PGlite | Transaction;

/**
 * Creates a new data directory (initdb) in a short-lived child process. initdb is a WASM module of
 * its own whose memory this process would otherwise keep for its whole life (about 130 MB of a
 * first `npm start`); a child gives it back when it exits.
 */
async function initDataDirApart(dataDir: string): Promise<void> {
  const pglite = import.meta.resolve('@electric-sql/pglite');
  const script = `import(${JSON.stringify(pglite)}).then(async ({ PGlite }) => { const pg = await PGlite.create(process.argv[1]); await pg.close(); })`;
  await new Promise<void>((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script, dataDir], (err, _out, stderr) =>
      err ? reject(new Error(`creating the embedded database in ${dataDir} failed: ${stderr.trim() || err.message}`)) : resolve(),
    );
  });
}

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
    cursor: cursorOn(pg),
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

/** Names the cursors of the one connection apart. */
let cursors = 0;

/**
 * A cursor on PGlite's one connection: declared WITH HOLD outside a transaction, so that the rows
 * are fetched `size` at a time by separate statements and other queries run in between (a cursor
 * inside a transaction would hold the connection, and every other request, until the reader is
 * done). The server keeps the result (spilled to its files past work_mem); this process holds one
 * batch. Closed when the reader finishes or leaves early.
 */
function cursorOn(pg: PgliteLike) {
  return <T extends object>(size: number) =>
    (strings: TemplateStringsArray, ...values: SqlValue[]): AsyncIterable<T[]> => ({
      async *[Symbol.asyncIterator]() {
        if (!Number.isInteger(size) || size < 1) throw new Error('a cursor reads at least one row at a time');
        const name = `sl_cursor_${++cursors}`;
        await turn();
        await pg.query(`declare ${name} no scroll cursor with hold for ${toText(strings)}`, values);
        try {
          for (;;) {
            await turn();
            const { rows } = await pg.query<T>(`fetch forward ${size} from ${name}`);
            if (rows.length > 0) yield rows;
            if (rows.length < size) return;
          }
        } finally {
          await pg.query(`close ${name}`);
        }
      },
    });
}

/**
 * The embedded default: Postgres compiled to WASM, persisted in `dataDir` (or in memory when
 * `dataDir` is undefined, for tests). One connection; PGlite queues concurrent queries and
 * serialises transactions, which keeps its accounting exact.
 */
export async function openPglite(dataDir: string | undefined, opts: { sharedBuffers?: string } = {}): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  // pg_trgm backs list-visitors' free-text search (migration 0011), as it does on a real server.
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
  if (dataDir && !existsSync(path.join(dataDir, 'PG_VERSION'))) await initDataDirApart(dataDir);
  // Postgres's shared buffers live in the WASM memory, which only ever grows: the default 128 MB is
  // most of an idle embedded server's memory. Reads past them go to the data files (the OS cache).
  const startParams = opts.sharedBuffers ? [...PGlite.defaultStartParams, '-c', `shared_buffers=${opts.sharedBuffers}`] : undefined;
  const options = { extensions: { pg_trgm }, ...(startParams ? { startParams } : {}) };
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
