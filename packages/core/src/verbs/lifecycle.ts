import type { PartnerCtx, VerbArgs } from '../context.ts';
import { generateApiKey, keyPrefixOf, mintWebhookSecret } from '../crypto.ts';
import { badRequest, sqlCall } from '../errors.ts';
import { assertReachableWebhook } from '../net/webhook-destination.ts';
import { prepareNewWebhook } from './new-webhook.ts';

/** Spec limit: 10 rotations per child per rolling 24 hours. */
export const ROTATIONS_PER_DAY = 10;

const iso = (d: Date | string) => new Date(d).toISOString();

/**
 * Resolves the webhook part of an update: which URL action to take and the candidate secret.
 * `undefined` = omitted, `null` = explicit null (spec: url null clears; secret null mints fresh).
 */
async function planWebhook(
  ctx: PartnerCtx,
  url: string | null | undefined,
  secret: string | null | undefined,
  field = 'webhook_url',
) {
  if (url === null && typeof secret === 'string') {
    throw badRequest(`webhook_secret cannot be set while ${field} is being cleared`);
  }
  const urlAction = url === undefined ? 'keep' : url === null ? 'clear' : 'set';
  const normalised = typeof url === 'string' ? await assertReachableWebhook(url, { allowPrivate: ctx.allowPrivateWebhooks }, ctx.webhooks, field) : null;
  // An explicit secret (string) or explicit null replaces; an omitted one keeps the existing secret.
  const secretAction = secret === undefined ? 'keep_or_mint' : 'replace';
  const minted = typeof secret === 'string' ? null : mintWebhookSecret();
  const candidate = typeof secret === 'string' ? secret : (minted as string);
  const needsCandidate = urlAction !== 'clear' && (urlAction === 'set' || secret !== undefined);
  return {
    urlAction,
    url: normalised,
    secretAction: urlAction === 'keep' && secret === undefined ? 'none' : secretAction,
    sealed: needsCandidate ? await ctx.keyring.seal(candidate) : null,
    candidate,
    minted: minted !== null,
  };
}

export interface UpdateChildInput {
  child_api_key_id: string;
  name?: string | undefined;
  monthly_id_quota?: number | undefined;
  status?: 'active' | 'suspended' | 'revoked' | undefined;
  extend_period_days?: number | undefined;
  webhook_url?: string | null | undefined;
  webhook_secret?: string | null | undefined;
}

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

/**
 * partner-update-child: any subset of name, quota (increase now, decrease queued), status, period
 * extension and webhook, in one SQL function; child.updated carries only what changed.
 */
export async function updateChild({ ctx, input }: VerbArgs<UpdateChildInput, PartnerCtx>) {
  const name = input.name?.trim();
  if (input.name !== undefined && !name) throw badRequest('name must not be empty');
  const hook = await planWebhook(ctx, input.webhook_url, input.webhook_secret);
  const [row] = await sqlCall(
    () => ctx.db<UpdatedRow>`select * from sl_update_child(
      ${ctx.caller.apiKeyId}, ${input.child_api_key_id}, ${name ?? null}, ${input.monthly_id_quota ?? null},
      ${input.status ?? null}, ${input.extend_period_days ?? null},
      ${hook.urlAction}, ${hook.url}, ${hook.secretAction}, ${hook.sealed})`,
  );
  if (!row) throw new Error('sl_update_child returned no row');
  const body = {
    success: true as const,
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
  if (row.secret_replaced && hook.minted) {
    return { ...body, webhook: { url: row.webhook_url, secret: hook.candidate } };
  }
  return body;
}

export interface AdoptInput {
  api_key_id: string;
  name: string;
  monthly_id_quota?: number | undefined;
  webhook_url?: string | undefined;
  webhook_secret?: string | undefined;
  brand_name?: string | undefined;
}

/** partner-adopt-existing-key: the caller's direct key becomes a managed child; not rotated. */
export async function adoptExistingKey({ ctx, input }: VerbArgs<AdoptInput, PartnerCtx>) {
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
    success: true as const,
    child: { api_key_id: row.api_key_id, child_user_id: row.child_user_id, name, status: row.status },
    website: { id: row.website_id, tracking_script_id: row.tracking_script_id, domain: row.domain },
    subscription: {
      id: row.subscription_id,
      monthly_id_quota: row.monthly_id_quota,
      current_period_end: iso(row.current_period_end),
      status: row.sub_status,
    },
    webhook: url === null ? null : { url, secret },
  };
}

/** partner-rotate-child-key: a new secret for the same key record; the old key is dead at commit. */
export async function rotateChildKey({ ctx, input }: VerbArgs<{ child_api_key_id: string }, PartnerCtx>) {
  const key = generateApiKey();
  const hash = await ctx.keyring.hashApiKey(key);
  const [row] = await sqlCall(
    () => ctx.db<{ old_key_prefix: string; rotated_at: Date }>`
      select * from sl_rotate_child_key(${ctx.caller.apiKeyId}, ${input.child_api_key_id}, ${hash},
        ${keyPrefixOf(key)}, ${ROTATIONS_PER_DAY})`,
  );
  if (!row) throw new Error('sl_rotate_child_key returned no row');
  return {
    success: true as const,
    child_api_key_id: input.child_api_key_id,
    key,
    key_prefix: keyPrefixOf(key),
    old_key_prefix: row.old_key_prefix,
    rotated_at: iso(row.rotated_at),
  };
}

/** partner-transfer-topup: pool top-up → child top-up, both or neither. */
export async function transferTopup({ ctx, input }: VerbArgs<{ child_api_key_id: string; amount: number }, PartnerCtx>) {
  const [row] = await sqlCall(
    () => ctx.db<{ partner_topup_balance: number; child_topup_balance: number }>`
      select * from sl_transfer_topup(${ctx.caller.apiKeyId}, ${input.child_api_key_id}, ${input.amount})`,
  );
  if (!row) throw new Error('sl_transfer_topup returned no row');
  return {
    success: true as const,
    partner_topup_balance: row.partner_topup_balance,
    child_topup_balance: row.child_topup_balance,
    transferred: input.amount,
  };
}

/** partner-release-child: back to a direct key of the partner; remaining top-up returns to the pool. */
export async function releaseChild({ ctx, input }: VerbArgs<{ child_api_key_id: string }, PartnerCtx>) {
  const [row] = await sqlCall(
    () => ctx.db<{ topup_returned: number }>`select * from sl_release_child(${ctx.caller.apiKeyId}, ${input.child_api_key_id})`,
  );
  if (!row) throw new Error('sl_release_child returned no row');
  return { success: true as const, released_api_key_id: input.child_api_key_id, topup_returned: row.topup_returned };
}

/** partner-set-webhook: the partner-level destination for child.* events. */
export async function setPartnerWebhook({
  ctx,
  input,
}: VerbArgs<{ url?: string | null | undefined; secret?: string | null | undefined }, PartnerCtx>) {
  if (input.url === undefined && input.secret === undefined) {
    throw badRequest('give url, secret, or both');
  }
  const hook = await planWebhook(ctx, input.url, input.secret, 'url');
  const secretAction = hook.secretAction === 'none' ? 'keep_or_mint' : hook.secretAction;
  const sealed = hook.sealed ?? (hook.urlAction === 'clear' ? null : await ctx.keyring.seal(hook.candidate));
  const [row] = await sqlCall(
    () => ctx.db<{ webhook_url: string | null; secret_replaced: boolean }>`
      select * from sl_set_partner_webhook(${ctx.caller.accountId}, ${hook.urlAction}, ${hook.url}, ${secretAction}, ${sealed})`,
  );
  if (!row) throw new Error('sl_set_partner_webhook returned no row');
  const body: { success: true; partner_webhook_url: string | null; partner_webhook_secret?: string; secret_unchanged: boolean } = {
    success: true,
    partner_webhook_url: row.webhook_url,
    secret_unchanged: row.webhook_url !== null && !row.secret_replaced,
  };
  if (row.secret_replaced && hook.minted) body.partner_webhook_secret = hook.candidate;
  return body;
}
