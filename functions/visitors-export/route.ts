import { createRoute, z } from '@hono/zod-openapi';
import { callerKey, ExportVisitorsInput, exportVisitors, type FunctionDefinition, openapi, policies } from '@sightline/core';

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: every visitor list-visitors lists for the same filters, as CSV',
  description:
    'The same query parameters as list-visitors without limit and offset; the same rows in the same order, with VisitorRow’s fields as columns (sites_visited joined with "; "). RFC 4180 (CRLF, quoted fields); a text cell that a spreadsheet would run as a formula (starting with =, +, -, @, tab or CR) is prefixed with an apostrophe. Streamed as the rows are read.',
  request: { query: ExportVisitorsInput },
  responses: {
    200: {
      description: 'The CSV file: a header row, then one row per visitor',
      headers: {
        'Content-Disposition': { description: 'attachment, with the file’s name', schema: { type: 'string' } },
      },
      content: { 'text/csv': { schema: z.string() } },
    },
  },
});

export const visitorsExport: FunctionDefinition = {
  name: 'visitors-export',
  mount: 'functions',
  method: 'GET',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) => {
      const deps = c.get('deps');
      const { filename, chunks } = await exportVisitors({ ctx: deps, input: { ...c.req.valid('query'), key: callerKey(c) } });
      const rows = chunks[Symbol.asyncIterator]();
      const encoder = new TextEncoder();
      // Pulled: the next batch is read from the database only when the client has taken the last one.
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const next = await rows.next();
            if (next.done) controller.close();
            else controller.enqueue(encoder.encode(next.value));
          } catch (err) {
            // The answer has started: a failure can only cut it short (the client sees a broken transfer).
            deps.log.error('visitors-export: the export stopped', { error: err instanceof Error ? err.message : String(err) });
            controller.error(err);
          }
        },
        // The client went away: leaving the loop closes the database cursor.
        async cancel() {
          await rows.return?.(undefined);
        },
      });
      return c.body(body, 200, {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="${filename}"`,
        'cache-control': 'no-store',
      });
    });
  },
};
