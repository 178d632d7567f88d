import { createRoute } from '@hono/zod-openapi';
import {
  type FunctionDefinition,
  jsonAnswer,
  ListPartnerEventsInput,
  listPartnerEvents,
  openapi,
  PartnerEvents,
  partnerCtx,
  policies,
} from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const ListEventsResponse = succeeded(PartnerEvents, 'ListEventsResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: recent partner events with delivery status and attempts, newest first',
  request: { query: ListPartnerEventsInput },
  responses: { 200: jsonAnswer('Events', ListEventsResponse) },
});

export const partnerListEvents: FunctionDefinition = {
  name: 'partner-list-events',
  mount: 'functions',
  method: 'GET',
  policy: policies.partnerRead,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await listPartnerEvents({ ctx: partnerCtx(c), input: c.req.valid('query') })) }, 200),
    );
  },
};
