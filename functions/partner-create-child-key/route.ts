import { createRoute, z } from '@hono/zod-openapi';
import { createChildKey, partnerCtx, openapi, type FunctionDefinition, policies, errorResponse } from '@sightline/core';
import { Uuid } from '../_shared/schemas.ts';

export const CreateChildBody = z
  .object({
    name: z.string().max(200).openapi({ description: 'Display name' }),
    domain: z.string().max(300).openapi({ description: 'Bare `host.tld`: no scheme, no path', example: 'shop.example.com' }),
    monthly_id_quota: z
      .number()
      .int()
      .min(0)
      .max(1_000_000_000)
      .optional()
      .openapi({ description: 'Default 0; 0 means the child is paused until it has quota or top-up IDs' }),
    webhook_url: z
      .string()
      .max(2048)
      .nullish()
      .openapi({ description: 'Valid http(s) URL that must answer a reachability check' }),
    webhook_secret: z
      .string()
      .min(8, 'must be at least 8 characters')
      .max(256)
      .nullish()
      .openapi({ description: 'Only with webhook_url; minted and returned when omitted' }),
    brand_name: z.string().max(200).nullish().openapi({ description: 'Whitelabel display name; defaults to name' }),
  })
  .strict()
  .openapi('CreateChildRequest');

export const CreateChildResponse = z
  .object({
    success: z.literal(true),
    child: z.object({
      api_key_id: Uuid,
      child_user_id: Uuid,
      key: z.string().openapi({ description: 'The child key, shown once' }),
      key_prefix: z.string(),
      name: z.string(),
      status: z.literal('active'),
    }),
    website: z.object({ id: Uuid, tracking_script_id: Uuid, domain: z.string() }),
    subscription: z.object({
      id: Uuid,
      kind: z.literal('trial_child'),
      monthly_id_quota: z.number().int(),
      current_period_end: z.string().openapi({ format: 'date-time' }),
      status: z.literal('active'),
      id_price_pence_override: z.number().nullable(),
    }),
    billing: z.object({
      status: z.literal('trial'),
      payment_subscription_item_id: z.string().nullable(),
      payment_subscription_id: z.string().nullable(),
      error: z.string().nullable(),
      advance_charge_pi_id: z.string().nullable(),
    }),
    webhook: z.object({
      url: z.string().nullable(),
      secret: z.string().nullable().openapi({ description: 'Shown once; null when no webhook is configured' }),
    }),
  })
  .openapi('CreateChildResponse');
export type CreateChildResponse = z.infer<typeof CreateChildResponse>;

export const route = createRoute({
  method: 'post',
  path: '/',
  summary: 'Provision a managed child: phantom user, key, website and 30-day subscription',
  request: {
    
    body: { required: true, content: { 'application/json': { schema: CreateChildBody } } },
  },
  responses: {
    201: { description: 'The child, its key (shown once) and webhook secret (shown once)', content: { 'application/json': { schema: CreateChildResponse } } },
    402: errorResponse('The pool is on prepaid billing with an empty balance'),
    409: errorResponse(
      'Domain already live on an active website; on monthly-invoice billing also no saved card, no per-ID rate, or an outstanding invoice',
    ),
  },
});

export const partnerCreateChildKey: FunctionDefinition = {
  name: 'partner-create-child-key',
  mount: 'functions',
  method: 'POST',
  policy: policies.partnerAction,
  register(app) {
    openapi(app, route, async (c) => {
      const body = c.req.valid('json');
      const created = await createChildKey({
        ctx: partnerCtx(c),
        input: {
          name: body.name,
          domain: body.domain,
          monthly_id_quota: body.monthly_id_quota,
          webhook_url: body.webhook_url ?? undefined,
          webhook_secret: body.webhook_secret ?? undefined,
          brand_name: body.brand_name ?? undefined,
        },
      });
      return c.json(created, 201);
    });
  },
};
