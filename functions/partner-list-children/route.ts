import { createRoute, z } from '@hono/zod-openapi';
import { listChildren, partnerCtx, openapi, type FunctionDefinition, policies } from '@sightline/core';
import { QueryBoolean, Uuid, whenGiven } from '../_shared/schemas.ts';

export const ListChildrenQuery = z.object({
  child_api_key_id: Uuid.optional().openapi({ description: 'Single-child lookup; `children` is empty if no match' }),
  include_inactive: QueryBoolean.optional().openapi({
    type: 'boolean',
    description: 'Also return suspended and revoked children',
  }),
  limit: z.coerce
    .number(whenGiven('must be a number'))
    .int('must be a whole number')
    .min(1, 'must be between 1 and 500')
    .max(500, 'must be between 1 and 500')
    .optional()
    .openapi({ type: 'integer', description: 'Addition to the spec: page size, 1 to 500. Without limit and offset, every child is returned, as the spec describes' }),
  offset: z.coerce
    .number(whenGiven('must be a number'))
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(1_000_000, 'must be at most 1000000')
    .optional()
    .openapi({ type: 'integer', description: 'Addition to the spec: children to skip, in creation order (oldest first)' }),
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

export const ListChildrenResponse = z.object({
  success: z.literal(true),
  children: z.array(ChildListing),
  next_offset: z
    .number()
    .int()
    .nullable()
    .optional()
    .openapi({ description: 'Addition to the spec, present when `limit` was sent: the offset of the next page, or null on the last one' }),
});
export type ListChildrenResponse = z.infer<typeof ListChildrenResponse>;

export const route = createRoute({
  method: 'get',
  path: '/',
  summary: 'List the caller’s managed children',
  request: { query: ListChildrenQuery },
  responses: {
    200: { description: 'The children', content: { 'application/json': { schema: ListChildrenResponse } } },
  },
});

export const partnerListChildren: FunctionDefinition = {
  name: 'partner-list-children',
  mount: 'functions',
  method: 'GET',
  policy: policies.partnerRead,
  register(app) {
    openapi(app, route, async (c) => {
      const q = c.req.valid('query');
      const { children, nextOffset } = await listChildren({
        ctx: partnerCtx(c),
        input: { child_api_key_id: q.child_api_key_id, include_inactive: q.include_inactive ?? false, limit: q.limit, offset: q.offset },
      });
      return c.json({ success: true as const, children, ...(q.limit === undefined ? {} : { next_offset: nextOffset }) }, 200);
    });
  },
};
