import { createRoute } from '@hono/zod-openapi';
import {
  type FunctionDefinition,
  jsonAnswer,
  openapi,
  PartnerWebhook,
  partnerCtx,
  policies,
  SetPartnerWebhookInput,
  setPartnerWebhook,
} from '@sightline/core';
import { jsonBody, succeeded } from '../_shared/schemas.ts';

export const SetWebhookResponse = succeeded(PartnerWebhook, 'SetWebhookResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Set the partner-level webhook for child.* events',
  request: { body: jsonBody(SetPartnerWebhookInput) },
  responses: { 200: jsonAnswer('The webhook', SetWebhookResponse) },
});

export const partnerSetWebhook: FunctionDefinition = {
  name: 'partner-set-webhook',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) =>
      c.json({ success: true as const, ...(await setPartnerWebhook({ ctx: partnerCtx(c), input: c.req.valid('json') })) }, 200),
    );
  },
};
