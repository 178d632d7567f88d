/**
 * The database port. Core code talks SQL through tagged templates only (values always travel as
 * parameters), against either postgres.js (a real server) or PGlite (embedded); both adapters
 * implement this interface, so verbs never know which one they run on.
 *
 * Conventions that keep the two drivers byte-identical: bigint/numeric results are cast to
 * int/float8 in SQL, timestamps come back as Date, and JSON parameters are passed as serialised text
 * and cast with `::text::jsonb` — a parameter typed jsonb directly would be JSON-encoded a second
 * time by postgres.js (stored as a JSON string), but not by PGlite.
 */
export type SqlValue = string | number | boolean | null | Date;
export type Row = Record<string, unknown>;

export interface Sql {
  <T extends object = Row>(strings: TemplateStringsArray, ...values: SqlValue[]): Promise<T[]>;
  /** Runs `fn` in one transaction; it commits when `fn` resolves and rolls back when it throws. */
  begin<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
  /**
   * A query read through a cursor, `size` rows at a time: each batch is fetched from the server when
   * the previous one has been consumed, so a result of any length never sits in this process's
   * memory. Leaving the loop early (break, throw) closes the cursor. Use for reads that stream out
   * (visitors-export); a page is read with the plain template.
   */
  cursor<T extends object = Row>(size: number): (strings: TemplateStringsArray, ...values: SqlValue[]) => AsyncIterable<T[]>;
}

export interface Database extends Sql {
  readonly kind: 'postgres' | 'pglite';
  /** Runs a multi-statement script (migrations) with no parameters. */
  exec(script: string): Promise<void>;
  /**
   * LISTEN on `channel`: `onNotify` gets each payload; `onListen` runs once listening, and again
   * after every reconnect (notifications sent while away are lost, so callers resynchronise there).
   * Resolves once the server has acknowledged the LISTEN.
   */
  listen(channel: string, onNotify: (payload: string) => void, onListen?: () => void): Promise<{ unlisten(): Promise<void> }>;
  close(): Promise<void>;
}
