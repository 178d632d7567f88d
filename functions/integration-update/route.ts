import { createRoute } from '@hono/zod-openapi';
import {
  callerKey,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
  UpdatedIntegration,
  UpdateIntegrationInput,
  updateIntegration,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const UpdateIntegrationResponse = succeeded(UpdatedIntegration, 'UpdateIntegrationResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Addition to the spec: rename an integration, change its signals or cooldown, pause or resume it',
  description:
    'A field omitted stays. `status: "active"` resumes an integration paused after failing (its failures forgotten); replay the deliveries that failed meanwhile with integration-delivery-replay.',
  request: { body: jsonBody(UpdateIntegrationInput) },
  responses: {
    200: jsonAnswer('The integration now', UpdateIntegrationResponse),
    404: errorResponse('No such integration in this account', ['not_found']),
  },
});

export const integrationUpdateFunction: FunctionDefinition = {
  name: 'integration-update',
  mount: 'functions',
  method: 'POST',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        { success: true as const, ...(await updateIntegration({ ctx: c.get('deps'), input: { ...c.req.valid('json'), key: callerKey(c) } })) },
        200,
      ),
    );
  },
};
