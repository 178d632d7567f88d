import { createRoute } from '@hono/zod-openapi';
import {
  callerKey,
  errorResponse,
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  policies,
  UpdatedSettings,
  UpdateSettingsInput,
  updateAccountSettings,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const UpdateSettingsResponse = succeeded(UpdatedSettings, 'UpdateSettingsResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Change any of the account’s settings: webhook, credit auto-reload, the page hosts its trackers accept',
  description:
    'Only the fields given change, in one transaction; an empty body and unknown fields are a 400. The account webhook receives `credits.low`, `credits.reloaded`, `credits.reload_failed`, `message.completed`, `icp.generated`, `icp.generation_failed` and `user.connected`, signed like every webhook (X-Service-Signature).',
  request: { body: jsonBody(UpdateSettingsInput) },
  responses: {
    200: jsonAnswer('The fields changed', UpdateSettingsResponse),
    409: errorResponse('auto_reload_enabled true before the operator has set up the reload amount and card', ['conflict']),
  },
});

export const apiUpdateSettings: FunctionDefinition = {
  name: 'api-update-settings',
  mount: 'functions',
  method: 'POST',
  policy: policies.connectedUser,
  register(app) {
    openapi(app, route, async (c) =>
      c.json(
        {
          success: true as const,
          ...(await updateAccountSettings({ ctx: c.get('deps'), input: { ...c.req.valid('json'), accountId: callerKey(c).accountId } })),
        },
        200,
      ),
    );
  },
};
