import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { PageLimit, PageOffset, QueryBoolean, Timestamp, Uuid } from '../kernel/schemas.ts';

export const ListChildrenInput = z.object({
  child_api_key_id: Uuid.optional().openapi({ description: 'Single-child lookup; `children` is empty if no match' }),
  include_inactive: QueryBoolean.optional().openapi({ type: 'boolean', description: 'Also return suspended and revoked children' }),
  limit: PageLimit.optional().openapi({
    description: 'Addition to the spec: page size, 1 to 500. Without limit and offset, every child is returned, as the spec describes',
  }),
  offset: PageOffset.optional().openapi({ description: 'Addition to the spec: children to skip, in creation order (oldest first)' }),
});
export type ListChildrenInput = z.infer<typeof ListChildrenInput>;

export const ChildListing = z
  .object({
    child_api_key_id: Uuid,
    child_user_id: Uuid,
    name: z.string().openapi({ description: '`(unnamed)` when the child has no name' }),
    domain: z.string().nullable(),
    tracking_script_id: Uuid.nullable(),
    status: z.enum(['active', 'suspended', 'revoked']),
    created_at: Timestamp,
    monthly_id_quota: z.number().int(),
    ids_used_this_period: z.number().int(),
    topup_balance: z.number().int(),
    current_period_end: Timestamp.nullable(),
    sub_status: z.string().nullable(),
    has_webhook: z.boolean(),
  })
  .openapi('ChildListing');
export type ChildListing = z.infer<typeof ChildListing>;

export const ChildrenPage = z.object({
  children: z.array(ChildListing),
  next_offset: z
    .number()
    .int()
    .nullable()
    .optional()
    .openapi({ description: 'Addition to the spec, present when `limit` was sent: the offset of the next page, or null on the last one' }),
});
export type ChildrenPage = z.infer<typeof ChildrenPage>;

interface ChildRow {
  child_api_key_id: string;
  child_user_id: string;
  name: string | null;
  domain: string | null;
  tracking_script_id: string | null;
  status: ChildListing['status'];
  created_at: Date;
  monthly_id_quota: number | null;
  ids_used_this_period: number | null;
  topup_balance: number | null;
  current_period_end: Date | null;
  sub_status: string | null;
  has_webhook: boolean;
}

/**
 * The caller's managed children, oldest first. Only `active` ones unless `include_inactive`;
 * `child_api_key_id` narrows to one child (an empty list when it is not the caller's child).
 * Without `limit` every child is listed and there is no `next_offset`, as the spec describes.
 */
export async function listChildren({ ctx, input }: VerbArgs<ListChildrenInput, PartnerCtx>): Promise<ChildrenPage> {
  const only = input.child_api_key_id ?? null;
  const offset = input.offset ?? 0;
  // One row past the page tells whether there is a next one, without a count over every child.
  const fetch = input.limit === undefined ? null : input.limit + 1;
  const rows = await ctx.db<ChildRow>`
    select k.id as child_api_key_id, k.account_id as child_user_id, k.name, w.domain, w.tracking_script_id,
           k.status, k.created_at, s.monthly_id_quota, s.ids_used_this_period, s.topup_balance,
           s.current_period_end, s.status as sub_status, k.webhook_url is not null as has_webhook
    from api_keys k
    left join child_subscriptions s on s.api_key_id = k.id
    left join lateral (
      select domain, tracking_script_id from websites
      where api_key_id = k.id and status = 'active'
      order by created_at desc limit 1
    ) w on true
    where k.parent_api_key_id = ${ctx.caller.apiKeyId}
      and (${only}::uuid is null or k.id = ${only}::uuid)
      and (${input.include_inactive ?? false} or k.status = 'active')
    order by k.created_at, k.id
    limit ${fetch}::int offset ${offset}::int`;
  const more = input.limit !== undefined && rows.length > input.limit;
  const page = more ? rows.slice(0, input.limit) : rows;
  const children = page.map((r) => ({
    child_api_key_id: r.child_api_key_id,
    child_user_id: r.child_user_id,
    name: r.name ?? '(unnamed)',
    domain: r.domain,
    tracking_script_id: r.tracking_script_id,
    status: r.status,
    created_at: new Date(r.created_at).toISOString(),
    monthly_id_quota: r.monthly_id_quota ?? 0,
    ids_used_this_period: r.ids_used_this_period ?? 0,
    topup_balance: r.topup_balance ?? 0,
    current_period_end: r.current_period_end ? new Date(r.current_period_end).toISOString() : null,
    sub_status: r.sub_status,
    has_webhook: r.has_webhook,
  }));
  return input.limit === undefined ? { children } : { children, next_offset: more ? offset + page.length : null };
}
