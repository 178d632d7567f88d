import { createRoute, z } from '@hono/zod-openapi';
import { listPartnerEvents, partnerCtx, openapi, type FunctionDefinition, policies } from '@sightline/core';
import { Timestamp, Uuid, whenGiven } from '../_shared/schemas.ts';

const DeliveryStatus = z.enum(['pending', 'delivered', 'failed', 'no_destination'], whenGiven('must be pending, delivered, failed or no_destination'));

export const ListEventsQuery = z.object({
  limit: z.coerce.number(whenGiven('must be a number')).int().min(1).max(200).optional().openapi({ type: 'integer', description: '1 to 200, default 50' }),
  status: DeliveryStatus.optional(),
  child_api_key_id: Uuid.optional(),
  event: z.string().max(100).optional().openapi({ example: 'child.suspended' }),
  before: Uuid.optional().openapi({ description: 'An event id from the previous page: returns older events' }),
});

export const PartnerEvent = z
  .object({
    id: Uuid,
    event: z.string(),
    child_api_key_id: Uuid.nullable(),
    created_at: Timestamp,
    delivery_status: z.enum(['pending', 'delivered', 'failed', 'no_destination']),
    attempts: z.number().int(),
    last_attempt_at: Timestamp.nullable(),
    next_attempt_at: Timestamp.nullable(),
    delivered_at: Timestamp.nullable(),
    last_error: z.string().nullable(),
    payload: z.object({ event: z.string(), timestamp: Timestamp, data: z.record(z.string(), z.unknown()) }),
  })
  .openapi('PartnerEvent');

export const ListEventsResponse = z.object({ success: z.literal(true), events: z.array(PartnerEvent) }).openapi('ListEventsResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: recent partner events with delivery status and attempts, newest first',
  request: { query: ListEventsQuery },
  responses: {
    200: { description: 'Events', content: { 'application/json': { schema: ListEventsResponse } } },
  },
});

export const partnerListEvents: FunctionDefinition = {
  name: 'partner-list-events',
  mount: 'functions',
  method: 'GET',
  policy: policies.partnerRead,
  register(app) {
    openapi(app, route, async (c) => {
      const q = c.req.valid('query');
      return c.json(await listPartnerEvents({ ctx: partnerCtx(c), input: { ...q, limit: q.limit ?? 50 } }), 200);
    });
  },
};
