import { createRoute } from '@hono/zod-openapi';
import {
  callerKey,
  DeletedIntegration,
  DeleteIntegrationInput,
  deleteIntegration,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const DeleteIntegrationResponse = succeeded(DeletedIntegration, 'DeleteIntegrationResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Addition to the spec: remove an integration and its sealed credential',
  description: 'Its deliveries not yet sent are settled as no_destination and never sent.',
  request: { body: jsonBody(DeleteIntegrationInput) },
  responses: {
    200: jsonAnswer('Deleted', DeleteIntegrationResponse),
    404: errorResponse('No such integration in this account', ['not_found']),
  },
});

export const integrationDeleteFunction: FunctionDefinition = {
  name: 'integration-delete',
  mount: 'functions',
  method: 'POST',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        { success: true as const, ...(await deleteIntegration({ ctx: c.get('deps'), input: { ...c.req.valid('json'), key: callerKey(c) } })) },
        200,
      ),
    );
  },
};
