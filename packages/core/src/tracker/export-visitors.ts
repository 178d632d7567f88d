import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { listingFilter, VisitorRow, VisitorsFilter } from './list-visitors.ts';

export const ExportVisitorsInput = VisitorsFilter;
export type ExportVisitorsInput = VisitorsFilter;

/** The CSV's columns: VisitorRow's fields, in its order (sites_visited joined with "; "). */
export const EXPORT_COLUMNS = Object.keys(VisitorRow.shape) as (keyof VisitorRow)[];

/** Rows fetched from the database at a time: what this process holds of an export at once. */
export const EXPORT_BATCH_ROWS = 500;

/** A spreadsheet reads a cell starting with one of these as a formula (OWASP: CSV injection). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV field (RFC 4180): empty for null; a text that a spreadsheet would run as a formula is
 * prefixed with an apostrophe (shown, not run); quoted when it holds a quote, comma or line break,
 * its quotes doubled. Numbers and booleans are written as JSON writes them, never prefixed.
 */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  let text = Array.isArray(value) ? value.join('; ') : String(value);
  if (FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One CSV record, CRLF-terminated (RFC 4180). */
export const csvRecord = (fields: readonly unknown[]): string => `${fields.map(csvField).join(',')}\r\n`;

export interface VisitorsExport {
  /** The download's name: the tracker (or "all") and the day of the export. */
  filename: string;
  /** The CSV text: the header, then one chunk per batch of rows as the database returns them. */
  chunks: AsyncIterable<string>;
}

/**
 * visitors-export: every row list-visitors lists for the same filters (its whole set, no paging), in
 * its order, as CSV. The filter is checked before anything is read (a bad one is a 400, not a broken
 * download); the rows are then read through a cursor, EXPORT_BATCH_ROWS at a time, each batch
 * written out before the next is fetched, so an export of any size holds one batch here
 * (sl_export_visitors; the caller's reader sets the pace). A suspended key still reads its data.
 */
export async function exportVisitors({ ctx, input }: VerbArgs<ExportVisitorsInput & { key: KeyRecord }>): Promise<VisitorsExport> {
  const f = listingFilter(input);
  // As list-visitors: the key's own lookups recorded so far are listed.
  if (f.api) await ctx.apiLookups.flush();
  const rows = ctx.db.cursor<{ visitor: string }>(EXPORT_BATCH_ROWS)`
    select visitor
    from sl_export_visitors(${input.key.accountId}, ${input.key.apiKeyId}, ${f.site}, ${f.since}, ${f.until}, ${f.pattern},
                            ${f.addressFrom}, ${f.addressTo}, ${f.trackers}, ${f.api}, ${f.watched}, ${f.pinned})`;
  async function* chunks(): AsyncGenerator<string> {
    yield csvRecord(EXPORT_COLUMNS);
    for await (const batch of rows) {
      let text = '';
      for (const { visitor } of batch) {
        const row = JSON.parse(visitor) as Record<string, unknown>;
        text += csvRecord(EXPORT_COLUMNS.map((column) => row[column]));
      }
      yield text;
    }
  }
  const day = new Date().toISOString().slice(0, 10);
  return { filename: `visitors-${f.site ?? 'all'}-${day}.csv`, chunks: chunks() };
}
