import { createRoute, z } from '@hono/zod-openapi';
import { partnerCtx, replayPartnerEvent, openapi, type FunctionDefinition, policies, errorResponse } from '@sightline/core';
import { jsonBody, Uuid } from '../_shared/schemas.ts';

export const ReplayBody = z.object({ event_id: Uuid }).strict().openapi('ReplayEventRequest');
export const ReplayResponse = z
  .object({ success: z.literal(true), event_id: Uuid, delivery_status: z.literal('pending') })
  .openapi('ReplayEventResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Addition to the spec: deliver one event again (a new first attempt, same body bytes)',
  request: { body: jsonBody(ReplayBody) },
  responses: {
    200: { description: 'Queued for delivery now', content: { 'application/json': { schema: ReplayResponse } } },
    404: errorResponse('No such event'),
    409: errorResponse('No webhook configured, or the event is still being delivered'),
  },
});

export const partnerReplayEvent: FunctionDefinition = {
  name: 'partner-replay-event',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) => {
      const out = await replayPartnerEvent({ ctx: partnerCtx(c), input: c.req.valid('json') });
      return c.json({ ...out, delivery_status: 'pending' as const }, 200);
    });
  },
};
