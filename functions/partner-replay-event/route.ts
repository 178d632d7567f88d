import { createRoute } from '@hono/zod-openapi';
import {
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  partnerCtx,
  policies,
  ReplayedEvent,
  ReplayPartnerEventInput,
  replayPartnerEvent,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const ReplayResponse = succeeded(ReplayedEvent, 'ReplayEventResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Addition to the spec: deliver one event again (a new first attempt, same body bytes)',
  request: { body: jsonBody(ReplayPartnerEventInput) },
  responses: {
    200: jsonAnswer('Queued for delivery now', ReplayResponse),
    404: errorResponse('No such event', ['not_found']),
    409: errorResponse('No webhook configured, or the event is still being delivered', ['conflict']),
  },
});

export const partnerReplayEvent: FunctionDefinition = {
  name: 'partner-replay-event',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await replayPartnerEvent({ ctx: partnerCtx(c), input: c.req.valid('json') })) }, 200),
    );
  },
};
