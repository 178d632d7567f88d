import { createRoute, z } from '@hono/zod-openapi';
import { partnerCtx, setPartnerWebhook, openapi, type FunctionDefinition, policies } from '@sightline/core';
import { jsonBody, WebhookSecret } from '../_shared/schemas.ts';

export const SetWebhookBody = z
  .object({
    url: z.string().max(2048).nullable().optional().openapi({ description: 'Destination; null disables webhooks and clears URL and secret' }),
    secret: WebhookSecret.nullable().optional().openapi({
      description: 'Omitted keeps the existing secret (minted when none exists); explicit null mints a fresh one',
    }),
  })
  .strict()
  .openapi('SetWebhookRequest');

export const SetWebhookResponse = z
  .object({
    success: z.literal(true),
    partner_webhook_url: z.string().nullable(),
    partner_webhook_secret: z.string().optional().openapi({ description: 'Returned once, only when newly minted' }),
    secret_unchanged: z.boolean(),
  })
  .openapi('SetWebhookResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Set the partner-level webhook for child.* events',
  request: { body: jsonBody(SetWebhookBody) },
  responses: {
    200: { description: 'The webhook', content: { 'application/json': { schema: SetWebhookResponse } } },
  },
});

export const partnerSetWebhook: FunctionDefinition = {
  name: 'partner-set-webhook',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) => c.json(await setPartnerWebhook({ ctx: partnerCtx(c), input: c.req.valid('json') }), 200));
  },
};
