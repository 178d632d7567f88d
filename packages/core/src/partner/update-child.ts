import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { badRequest, sqlCall } from '../kernel/errors.ts';
import { ChildStatus, DisplayName, PositiveDays, Quota, Timestamp, Uuid, WebhookSecret, WebhookUrl } from '../kernel/schemas.ts';
import { planWebhookChange } from './webhook-change.ts';

export const UpdateChildInput = z
  .object({
    child_api_key_id: Uuid,
    name: DisplayName.optional(),
    monthly_id_quota: Quota.optional().openapi({ description: 'An increase applies now; a decrease is queued for the next period' }),
    status: ChildStatus.optional(),
    extend_period_days: PositiveDays.optional().openapi({ description: 'New current_period_end = max(current_period_end, now) + days' }),
    webhook_url: WebhookUrl.nullable().optional().openapi({ description: 'A URL sets or updates; null clears URL and secret' }),
    webhook_secret: WebhookSecret.nullable()
      .optional()
      .openapi({ description: 'A string sets the secret; null mints a fresh one; omitted keeps it' }),
  })
  .strict()
  .openapi('UpdateChildRequest');
export type UpdateChildInput = z.infer<typeof UpdateChildInput>;

export const UpdatedChild = z.object({
  child: z.object({
    id: Uuid,
    user_id: Uuid,
    name: z.string(),
    status: z.string(),
    created_at: Timestamp,
    webhook_url: z.string().nullable(),
    parent_api_key_id: Uuid,
  }),
  subscription: z.object({
    id: Uuid,
    kind: z.string(),
    monthly_id_quota: z.number().int(),
    ids_used_this_period: z.number().int(),
    topup_balance: z.number().int(),
    current_period_end: Timestamp,
    status: z.string(),
  }),
  webhook: z
    .object({ url: z.string().nullable(), secret: z.string() })
    .optional()
    .openapi({ description: 'Present only when a secret was minted in this call' }),
});
export type UpdatedChild = z.infer<typeof UpdatedChild>;

interface UpdatedRow {
  id: string;
  user_id: string;
  name: string | null;
  status: string;
  created_at: Date;
  webhook_url: string | null;
  parent_api_key_id: string;
  subscription_id: string;
  kind: string;
  monthly_id_quota: number;
  ids_used_this_period: number;
  topup_balance: number;
  current_period_end: Date;
  sub_status: string;
  secret_replaced: boolean;
}

const iso = (d: Date | string) => new Date(d).toISOString();

/**
 * partner-update-child: any subset of name, quota (increase now, decrease queued), status, period
 * extension and webhook, in one SQL function; child.updated carries only what changed.
 */
export async function updateChild({ ctx, input }: VerbArgs<UpdateChildInput, PartnerCtx>): Promise<UpdatedChild> {
  const name = input.name?.trim();
  if (input.name !== undefined && !name) throw badRequest('name must not be empty');
  const hook = await planWebhookChange(ctx, input.webhook_url, input.webhook_secret);
  const [row] = await sqlCall(
    () => ctx.db<UpdatedRow>`select * from sl_update_child(
      ${ctx.caller.apiKeyId}, ${input.child_api_key_id}, ${name ?? null}, ${input.monthly_id_quota ?? null},
      ${input.status ?? null}, ${input.extend_period_days ?? null},
      ${hook.urlAction}, ${hook.url}, ${hook.secretAction}, ${hook.sealed})`,
  );
  if (!row) throw new Error('sl_update_child returned no row');
  const updated: UpdatedChild = {
    child: {
      id: row.id,
      user_id: row.user_id,
      name: row.name ?? '(unnamed)',
      status: row.status,
      created_at: iso(row.created_at),
      webhook_url: row.webhook_url,
      parent_api_key_id: row.parent_api_key_id,
    },
    subscription: {
      id: row.subscription_id,
      kind: row.kind,
      monthly_id_quota: row.monthly_id_quota,
      ids_used_this_period: row.ids_used_this_period,
      topup_balance: row.topup_balance,
      current_period_end: iso(row.current_period_end),
      status: row.sub_status,
    },
  };
  // The webhook field appears only when a secret was minted in this call.
  if (row.secret_replaced && hook.minted) updated.webhook = { url: row.webhook_url, secret: hook.candidate };
  return updated;
}
