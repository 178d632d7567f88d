import { createRoute, z } from '@hono/zod-openapi';
import { type FunctionDefinition, openapi, policies, serveTrackerScript, TRACKER_CACHE_CONTROL, TrackerScriptFile } from '@sightline/core';

export const route = createRoute({
  method: 'get',
  path: '/{file}',
  summary: 'The tracker script: per site (`<tracking_script_id>.js`, configured by the server) or generic (`tracker.js`)',
  description:
    'The per-site file has the tracking id and the collect path filled in; the generic file reads `data-id` (and an optional `data-api` endpoint) from its own script tag. Any well-formed id gets the script, so the URL cannot tell which sites exist. Strong ETag; If-None-Match with the current one answers 304.',
  request: {
    params: z.object({ file: TrackerScriptFile.openapi({ param: { name: 'file', in: 'path' } }) }),
    headers: z.object({
      'if-none-match': z.string().optional().openapi({ description: 'An ETag from an earlier answer: 304 when the script is unchanged' }),
    }),
  },
  responses: {
    200: {
      description: 'The script (JavaScript, at most 1.5 KB gzipped)',
      headers: {
        ETag: { description: 'A strong validator: a digest of the bytes served', schema: { type: 'string' } },
        'Cache-Control': { description: TRACKER_CACHE_CONTROL, schema: { type: 'string' } },
      },
      content: { 'application/javascript': { schema: z.string() } },
    },
    304: { description: 'Not modified: If-None-Match named the current ETag' },
  },
});

export const t: FunctionDefinition = {
  name: 't',
  mount: 'root',
  method: 'GET',
  // No key; CORS too, so a page may load it with `crossorigin` (and Subresource Integrity).
  policy: policies.publicTracker,
  // The script is built in: answered without the database.
  readsDatabase: false,
  register(app) {
    openapi(app, route, async (c) => {
      const answer = await serveTrackerScript({ input: { file: c.req.valid('param').file, ifNoneMatch: c.req.valid('header')['if-none-match'] } });
      return answer.status === 304 ? c.body(null, 304, answer.headers) : c.body(answer.body, 200, answer.headers);
    });
  },
};
