import { createRoute } from '@hono/zod-openapi';
import {
  CreatedIntegration,
  CreateIntegrationInput,
  callerKey,
  createIntegration,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const CreateIntegrationResponse = succeeded(CreatedIntegration, 'CreateIntegrationResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Addition to the spec: send chosen signals to Slack or Teams, or push them to HubSpot or Pipedrive',
  description:
    'Slack and Teams take `webhook_url` (an incoming webhook, or a Teams workflow’s URL); HubSpot and Pipedrive take `token`. The URL or token is sealed and never shown again. Each signal of a website of the account writes one delivery per company per cooldown, sent and retried like a webhook (see integration-deliveries). At most 20 per account.',
  request: { body: jsonBody(CreateIntegrationInput) },
  responses: {
    201: jsonAnswer('Created', CreateIntegrationResponse),
    403: errorResponse('A key scoped to its own websites must name one of them', ['forbidden']),
    404: errorResponse('website_id is not one of the key’s trackers', ['not_found']),
    409: errorResponse('The account has 20 integrations already', ['conflict']),
  },
});

export const integrationCreateFunction: FunctionDefinition = {
  name: 'integration-create',
  mount: 'functions',
  method: 'POST',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        { success: true as const, ...(await createIntegration({ ctx: c.get('deps'), input: { ...c.req.valid('json'), key: callerKey(c) } })) },
        201,
      ),
    );
  },
};
