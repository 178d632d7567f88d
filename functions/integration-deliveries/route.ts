import { createRoute } from '@hono/zod-openapi';
import {
  callerKey,
  type FunctionDefinition,
  IntegrationDeliveries,
  jsonAnswer,
  ListIntegrationDeliveriesInput,
  listIntegrationDeliveries,
  openapi,
  policies,
} from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const ListIntegrationDeliveriesResponse = succeeded(IntegrationDeliveries, 'ListIntegrationDeliveriesResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: the account’s alerts and CRM pushes with their delivery status, attempts and last error',
  description: 'Newest first, 50 a page unless `limit` says; `before` (a delivery id) pages back.',
  request: { query: ListIntegrationDeliveriesInput },
  responses: { 200: jsonAnswer('The deliveries', ListIntegrationDeliveriesResponse) },
});

export const integrationDeliveriesFunction: FunctionDefinition = {
  name: 'integration-deliveries',
  mount: 'functions',
  method: 'GET',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        {
          success: true as const,
          ...(await listIntegrationDeliveries({ ctx: c.get('deps'), input: { ...c.req.valid('query'), key: callerKey(c) } })),
        },
        200,
      ),
    );
  },
};
