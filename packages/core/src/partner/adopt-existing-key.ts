import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { badRequest, sqlCall } from '../kernel/errors.ts';
import { DisplayName, Quota, Timestamp, Uuid, WebhookSecret, WebhookUrl } from '../kernel/schemas.ts';
import { prepareNewWebhook } from './new-webhook.ts';

export const AdoptExistingKeyInput = z
  .object({
    api_key_id: Uuid.openapi({ description: 'A direct key of the caller: no parent, active, with an active website' }),
    name: DisplayName,
    monthly_id_quota: Quota.optional(),
    webhook_url: WebhookUrl.optional().openapi({ description: 'Overwrites any existing webhook on the key' }),
    webhook_secret: WebhookSecret.optional(),
    brand_name: DisplayName.optional(),
  })
  .strict()
  .openapi('AdoptKeyRequest');
export type AdoptExistingKeyInput = z.infer<typeof AdoptExistingKeyInput>;

export const AdoptedChild = z.object({
  child: z.object({ api_key_id: Uuid, child_user_id: Uuid, name: z.string(), status: z.string() }),
  website: z.object({ id: Uuid, tracking_script_id: Uuid, domain: z.string() }),
  subscription: z.object({ id: Uuid, monthly_id_quota: z.number().int(), current_period_end: Timestamp, status: z.string() }),
  webhook: z.object({ url: z.string(), secret: z.string().nullable() }).nullable(),
});
export type AdoptedChild = z.infer<typeof AdoptedChild>;

/**
 * partner-adopt-existing-key: the caller's direct key becomes a managed child; not rotated. Like every
 * child key it acts on its own (phantom) account again, whatever scope it had as a direct key.
 */
export async function adoptExistingKey({ ctx, input }: VerbArgs<AdoptExistingKeyInput, PartnerCtx>): Promise<AdoptedChild> {
  const name = input.name.trim();
  if (!name) throw badRequest('name is required');
  const { url, secret, sealed } = await prepareNewWebhook(ctx, input.webhook_url, input.webhook_secret);
  const [row] = await sqlCall(
    () => ctx.db<{
      api_key_id: string;
      child_user_id: string;
      status: string;
      website_id: string;
      tracking_script_id: string;
      domain: string;
      subscription_id: string;
      monthly_id_quota: number;
      current_period_end: Date;
      sub_status: string;
    }>`select * from sl_adopt_key(${ctx.caller.apiKeyId}, ${input.api_key_id}, ${name},
        ${input.monthly_id_quota ?? 0}, ${input.brand_name?.trim() || null}, ${url !== null}, ${url}, ${sealed})`,
  );
  if (!row) throw new Error('sl_adopt_key returned no row');
  return {
    child: { api_key_id: row.api_key_id, child_user_id: row.child_user_id, name, status: row.status },
    website: { id: row.website_id, tracking_script_id: row.tracking_script_id, domain: row.domain },
    subscription: {
      id: row.subscription_id,
      monthly_id_quota: row.monthly_id_quota,
      current_period_end: new Date(row.current_period_end).toISOString(),
      status: row.sub_status,
    },
    webhook: url === null ? null : { url, secret },
  };
}
