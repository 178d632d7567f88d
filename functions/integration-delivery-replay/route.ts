import { createRoute } from '@hono/zod-openapi';
import {
  callerKey,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
  ReplayedDelivery,
  ReplayIntegrationDeliveryInput,
  replayIntegrationDelivery,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const ReplayIntegrationDeliveryResponse = succeeded(ReplayedDelivery, 'ReplayIntegrationDeliveryResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Addition to the spec: send one of the account’s alerts or CRM pushes again',
  description:
    'A new first attempt of the same stored signal, with the full retry schedule; not while it is pending, and only to an active integration.',
  request: { body: jsonBody(ReplayIntegrationDeliveryInput) },
  responses: {
    200: jsonAnswer('Queued again', ReplayIntegrationDeliveryResponse),
    404: errorResponse('No such delivery of this account’s integrations', ['not_found']),
    409: errorResponse('The integration is paused or gone, or the delivery is still pending', ['conflict']),
  },
});

export const integrationDeliveryReplayFunction: FunctionDefinition = {
  name: 'integration-delivery-replay',
  mount: 'functions',
  method: 'POST',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        {
          success: true as const,
          ...(await replayIntegrationDelivery({ ctx: c.get('deps'), input: { ...c.req.valid('json'), key: callerKey(c) } })),
        },
        200,
      ),
    );
  },
};
