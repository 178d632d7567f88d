import type { PartnerCtx, VerbArgs } from '../context.ts';
import { generateApiKey, keyPrefixOf } from '../crypto.ts';
import { badRequest, sqlCall } from '../errors.ts';
import { normaliseTrackerDomain } from './domain.ts';
import { prepareNewWebhook } from './new-webhook.ts';

export interface CreateChildInput {
  name: string;
  domain: string;
  monthly_id_quota?: number | undefined;
  webhook_url?: string | undefined;
  webhook_secret?: string | undefined;
  brand_name?: string | undefined;
}

export interface CreatedChild {
  success: true;
  child: { api_key_id: string; child_user_id: string; key: string; key_prefix: string; name: string; status: 'active' };
  website: { id: string; tracking_script_id: string; domain: string };
  subscription: {
    id: string;
    kind: 'trial_child';
    monthly_id_quota: number;
    current_period_end: string;
    status: 'active';
    id_price_pence_override: number | null;
  };
  billing: {
    status: 'trial';
    payment_subscription_item_id: string | null;
    payment_subscription_id: string | null;
    error: string | null;
    advance_charge_pi_id: string | null;
  };
  webhook: { url: string | null; secret: string | null };
}

/**
 * Provisions a managed child: phantom user, key, website with a new tracking_script_id and a
 * 30-day subscription, plus `child.created` in the outbox — all in `sl_create_child`, one
 * transaction. The key and the webhook secret are returned here once and stored only as a hash
 * and a sealed value. The webhook URL is probed before anything is written.
 */
export async function createChildKey({ ctx, input }: VerbArgs<CreateChildInput, PartnerCtx>): Promise<CreatedChild> {
  const name = input.name.trim();
  if (!name) throw badRequest('name is required');
  const domain = normaliseTrackerDomain(input.domain);
  const quota = input.monthly_id_quota ?? 0;
  const brandName = input.brand_name?.trim() || name;

  const webhook = await prepareNewWebhook(ctx, input.webhook_url, input.webhook_secret);
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
  );
  if (!row) throw new Error('sl_create_child returned no row');

  return {
    success: true,
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

export interface ChildListing {
  child_api_key_id: string;
  child_user_id: string;
  name: string;
  domain: string | null;
  tracking_script_id: string | null;
  status: 'active' | 'suspended' | 'revoked';
  created_at: string;
  monthly_id_quota: number;
  ids_used_this_period: number;
  topup_balance: number;
  current_period_end: string | null;
  sub_status: string | null;
  has_webhook: boolean;
}

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
 */
export async function listChildren({
  ctx,
  input,
}: VerbArgs<
  { child_api_key_id?: string | undefined; include_inactive: boolean; limit?: number | undefined; offset?: number | undefined },
  PartnerCtx
>): Promise<{ children: ChildListing[]; nextOffset: number | null }> {
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
      and (${input.include_inactive} or k.status = 'active')
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
  return { children, nextOffset: more ? offset + page.length : null };
}
