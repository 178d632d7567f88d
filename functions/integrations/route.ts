import { createRoute } from '@hono/zod-openapi';
import { callerKey, type FunctionDefinition, IntegrationList, jsonAnswer, listIntegrations, openapi, policies } from '@sightline/core';
import { succeeded } from '../_shared/schemas.ts';

export const ListIntegrationsResponse = succeeded(IntegrationList, 'ListIntegrationsResponse');

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'Addition to the spec: the account’s alerts (Slack, Teams) and CRM pushes (HubSpot, Pipedrive)',
  description: 'Newest first. A webhook URL or token is never shown once set.',
  responses: { 200: jsonAnswer('The integrations', ListIntegrationsResponse) },
});

export const integrationsFunction: FunctionDefinition = {
  name: 'integrations',
  mount: 'functions',
  method: 'GET',
  policy: policies.trackerOwner,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await listIntegrations({ ctx: c.get('deps'), input: { key: callerKey(c) } })) }, 200),
    );
  },
};
