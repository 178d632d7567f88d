import { createRoute, z } from '@hono/zod-openapi';
import { adoptExistingKey, partnerCtx, openapi, type FunctionDefinition, policies, errorResponse } from '@sightline/core';
import { jsonBody, Quota, Timestamp, Uuid, WebhookSecret } from '../_shared/schemas.ts';

export const AdoptBody = z
  .object({
    api_key_id: Uuid.openapi({ description: 'A direct key of the caller: no parent, active, with an active website' }),
    name: z.string().max(200),
    monthly_id_quota: Quota.optional(),
    webhook_url: z.string().max(2048).optional().openapi({ description: 'Overwrites any existing webhook on the key' }),
    webhook_secret: WebhookSecret.optional(),
    brand_name: z.string().max(200).optional(),
  })
  .strict()
  .openapi('AdoptKeyRequest');

export const AdoptResponse = z
  .object({
    success: z.literal(true),
    child: z.object({ api_key_id: Uuid, child_user_id: Uuid, name: z.string(), status: z.string() }),
    website: z.object({ id: Uuid, tracking_script_id: Uuid, domain: z.string() }),
    subscription: z.object({ id: Uuid, monthly_id_quota: z.number().int(), current_period_end: Timestamp, status: z.string() }),
    webhook: z.object({ url: z.string(), secret: z.string().nullable() }).nullable(),
  })
  .openapi('AdoptKeyResponse');

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Convert a direct tracker of the partner into a managed child',
  request: { body: jsonBody(AdoptBody) },
  responses: {
    200: { description: 'The adopted child', content: { 'application/json': { schema: AdoptResponse } } },
    404: errorResponse('No such key'),
    409: errorResponse('Already has a parent, not active, no active website, or the authenticating key itself'),
  },
});

export const partnerAdoptExistingKey: FunctionDefinition = {
  name: 'partner-adopt-existing-key',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) => c.json(await adoptExistingKey({ ctx: partnerCtx(c), input: c.req.valid('json') }), 200));
  },
};
