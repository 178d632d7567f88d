import { createRoute, z } from '@hono/zod-openapi';
import { listChildren, partnerCtx, openapi, type FunctionDefinition } from '@sightline/core';
import { partnerErrors, QueryBoolean, Uuid } from '../_shared/schemas.ts';

export const ListChildrenQuery = z.object({
  child_api_key_id: Uuid.optional().openapi({ description: 'Single-child lookup; `children` is empty if no match' }),
  include_inactive: QueryBoolean.optional().openapi({
    type: 'boolean',
    description: 'Also return suspended and revoked children',
  }),
});

export const ChildListing = z
  .object({
    child_api_key_id: Uuid,
    child_user_id: Uuid,
    name: z.string().openapi({ description: '`(unnamed)` when the child has no name' }),
    domain: z.string().nullable(),
    tracking_script_id: Uuid.nullable(),
    status: z.enum(['active', 'suspended', 'revoked']),
    created_at: z.string().openapi({ format: 'date-time' }),
    monthly_id_quota: z.number().int(),
    ids_used_this_period: z.number().int(),
    topup_balance: z.number().int(),
    current_period_end: z.string().nullable().openapi({ format: 'date-time' }),
    sub_status: z.string().nullable(),
    has_webhook: z.boolean(),
  })
  .openapi('ChildListing');

export const ListChildrenResponse = z.object({ success: z.literal(true), children: z.array(ChildListing) });
export type ListChildrenResponse = z.infer<typeof ListChildrenResponse>;

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'List the caller’s managed children',
  request: { query: ListChildrenQuery },
  responses: {
    200: { description: 'The children', content: { 'application/json': { schema: ListChildrenResponse } } },
    ...partnerErrors,
  },
});

export const partnerListChildren: FunctionDefinition = {
  name: 'partner-list-children',
  mount: 'functions',
  method: 'GET',
  auth: 'partner',
  register(app) {
    openapi(app, route, async (c) => {
      const q = c.req.valid('query');
      const children = await listChildren({
        ctx: partnerCtx(c),
        input: { child_api_key_id: q.child_api_key_id, include_inactive: q.include_inactive ?? false },
      });
      return c.json({ success: true as const, children }, 200);
    });
  },
};
