import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { generateApiKey, keyPrefixOf } from '../kernel/crypto.ts';
import { badRequest, sqlCall } from '../kernel/errors.ts';
import { DisplayName, Quota, Timestamp, Uuid, WebhookSecret, WebhookUrl } from '../kernel/schemas.ts';
import { normaliseTrackerDomain } from '../tracker/normalise-tracker-domain.ts';
import { prepareNewWebhook } from './new-webhook.ts';

export const CreateChildKeyInput = z
  .object({
    name: DisplayName.openapi({ description: 'Display name' }),
    domain: z.string().max(300).openapi({ description: 'Bare `host.tld`: no scheme, no path', example: 'shop.example.com' }),
    monthly_id_quota: Quota.optional().openapi({ description: 'Default 0; 0 means the child is paused until it has quota or top-up IDs' }),
    webhook_url: WebhookUrl.nullish().openapi({ description: 'Valid http(s) URL that must answer a reachability check' }),
    webhook_secret: WebhookSecret.nullish().openapi({ description: 'Only with webhook_url; minted and returned when omitted' }),
    brand_name: DisplayName.nullish().openapi({ description: 'Whitelabel display name; defaults to name' }),
  })
  .strict()
  .openapi('CreateChildRequest');
export type CreateChildKeyInput = z.infer<typeof CreateChildKeyInput>;

export const CreatedChild = z.object({
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
    current_period_end: Timestamp,
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
});
export type CreatedChild = z.infer<typeof CreatedChild>;

/**
 * Provisions a managed child: phantom user, key, website with a new tracking_script_id and a
 * 30-day subscription, plus `child.created` in the outbox — all in `sl_create_child`, one
 * transaction. The key and the webhook secret are returned here once and stored only as a hash
 * and a sealed value. The webhook URL is probed before anything is written.
 */
export async function createChildKey({ ctx, input }: VerbArgs<CreateChildKeyInput, PartnerCtx>): Promise<CreatedChild> {
  const name = input.name.trim();
  if (!name) throw badRequest('name is required');
  const domain = normaliseTrackerDomain(input.domain);
  const quota = input.monthly_id_quota ?? 0;
  const brandName = input.brand_name?.trim() || name;

  const webhook = await prepareNewWebhook(ctx, input.webhook_url ?? undefined, input.webhook_secret ?? undefined);
  const key = generateApiKey();
  const keyHash = await ctx.keyring.hashApiKey(key);

  const [row] = await sqlCall(
    () => ctx.db<{
      api_key_id: string;
      child_user_id: string;
      website_id: string;
      tracking_script_id: string;
      subscription_id: string;
      current_period_end: Date;
    }>`select * from sl_create_child(
        ${ctx.caller.apiKeyId}, ${name}, ${domain}, ${quota}, ${brandName},
        ${keyHash}, ${keyPrefixOf(key)}, ${webhook.url}, ${webhook.sealed})`,
    // Its 402: the pool cannot fund a child (no pool, or a prepaid pool with no IDs).
    { 402: 'insufficient_ids' },
  );
  if (!row) throw new Error('sl_create_child returned no row');

  return {
    child: {
      api_key_id: row.api_key_id,
      child_user_id: row.child_user_id,
      key,
      key_prefix: keyPrefixOf(key),
      name,
      status: 'active',
    },
    website: { id: row.website_id, tracking_script_id: row.tracking_script_id, domain },
    subscription: {
      id: row.subscription_id,
      kind: 'trial_child',
      monthly_id_quota: quota,
      current_period_end: new Date(row.current_period_end).toISOString(),
      status: 'active',
      id_price_pence_override: null,
    },
    billing: {
      status: 'trial',
      payment_subscription_item_id: null,
      payment_subscription_id: null,
      error: null,
      advance_charge_pi_id: null,
    },
    webhook: { url: webhook.url, secret: webhook.secret },
  };
}
