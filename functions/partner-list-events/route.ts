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
  description:
    'How far back it sees: every event still pending, and each ended one (delivered, finally failed, or without a destination) for WEBHOOK_EVENT_RETENTION_DAYS after it ended (default 30 days; docs/operating.md, "Data lifecycle"), after which the data-lifecycle sweep deletes it and its attempts, and partner-replay-event no longer finds it.',
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
