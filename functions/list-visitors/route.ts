import { createRoute, type z } from '@hono/zod-openapi';
import {
  callerKey,
  type FunctionDefinition,
  jsonAnswer,
  ListVisitorsInput,
  listVisitors,
  openapi,
  policies,
  VisitorsPage,
  visitorsPageBody,
  writtenJson,
} from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const ListVisitorsResponse = succeeded(VisitorsPage, 'ListVisitorsResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Identified visitors of the trackers the key owns, and the key’s own identified lookups',
  description:
    'Newest last_seen first. Incremental sync: pass the latest last_seen already processed as `since`. A suspended key still reads its data.',
  request: { query: ListVisitorsInput },
  responses: { 200: jsonAnswer('A page of visitors', ListVisitorsResponse) },
});

export const listVisitorsFunction: FunctionDefinition = {
  name: 'list-visitors',
  mount: 'functions',
  method: 'GET',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) => {
      const page = await listVisitors({ ctx: c.get('deps'), input: { ...c.req.valid('query'), key: callerKey(c) } });
      return writtenJson<z.infer<typeof ListVisitorsResponse>>(c, visitorsPageBody(page));
    });
  },
};
