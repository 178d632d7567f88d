import type { CoreDeps, VerbArgs } from '../context.ts';
import { generateApiKey, keyPrefixOf } from '../crypto.ts';
import type { Sql } from '../db.ts';
import { badRequest, notFound, sqlCall } from '../errors.ts';
import { normaliseTrackerDomain } from './domain.ts';

/** Operator verbs: what the spec's "platform dashboard" does, driven by `npm run admin`. */

export interface CreatePartnerInput {
  name: string;
  billing?: 'prepaid' | 'invoice_monthly';
  quota?: number;
  topup?: number;
  perIdPence?: number;
  card?: string;
}

async function insertKey(
  tx: Sql,
  ctx: CoreDeps,
  accountId: string,
  opts: { master: boolean },
): Promise<{ id: string; key: string }> {
  const key = generateApiKey();
  const hash = await ctx.keyring.hashApiKey(key);
  const [row] = await tx<{ id: string }>`
    insert into api_keys (account_id, key_hash, key_prefix, is_partner_master)
    values (${accountId}, ${hash}, ${keyPrefixOf(key)}, ${opts.master})
    returning id`;
  if (!row) throw new Error('api key insert returned no row');
  return { id: row.id, key };
}

async function insertWebsite(tx: Sql, apiKeyId: string, domain: string) {
  try {
    const [row] = await tx<{ id: string; tracking_script_id: string }>`
      insert into websites (api_key_id, domain) values (${apiKeyId}, ${domain})
      returning id, tracking_script_id`;
    if (!row) throw new Error('website insert returned no row');
    return row;
  } catch (err) {
    if ((err as { code?: string }).code === '23505') {
      throw badRequest(`domain ${domain} is already registered on an active website`);
    }
    throw err;
  }
}

/** A partner account with its designated master key and a pool starting a 30-day period now. */
export async function createPartner({ ctx, input }: VerbArgs<CreatePartnerInput>) {
  const name = input.name.trim();
  if (!name) throw badRequest('--name is required');
  return sqlCall(() =>
    ctx.db.begin(async (tx) => {
      const [account] = await tx<{ id: string }>`
        insert into accounts (name, is_partner) values (${name}, true) returning id`;
      if (!account) throw new Error('account insert returned no row');
      const key = await insertKey(tx, ctx, account.id, { master: true });
      const [pool] = await tx<{ id: string }>`
        insert into pools (account_id, monthly_id_quota, topup_balance, pool_billing_mode, partner_per_id_pence,
                           payment_method_id, current_period_start, current_period_end)
        values (${account.id}, ${input.quota ?? 0}, ${input.topup ?? 0}, ${input.billing ?? 'prepaid'},
                ${input.perIdPence ?? null}, ${input.card ?? null}, now(), now() + interval '30 days')
        returning id`;
      if (!pool) throw new Error('pool insert returned no row');
      if ((input.topup ?? 0) > 0) {
        await tx`insert into topups (pool_id, amount_ids, status, source)
                 values (${pool.id}, ${input.topup ?? 0}, 'completed', 'operator')`;
      }
      return { account_id: account.id, api_key_id: key.id, key: key.key };
    }),
  );
}

/** A direct (non-partner) account with one active key and one website. */
export async function createDirectAccount({ ctx, input }: VerbArgs<{ name: string; domain: string }>) {
  const name = input.name.trim();
  if (!name) throw badRequest('--name is required');
  const domain = normaliseTrackerDomain(input.domain, '--domain');
  return ctx.db.begin(async (tx) => {
    const [account] = await tx<{ id: string }>`insert into accounts (name) values (${name}) returning id`;
    if (!account) throw new Error('account insert returned no row');
    const key = await insertKey(tx, ctx, account.id, { master: false });
    const site = await insertWebsite(tx, key.id, domain);
    return {
      account_id: account.id,
      api_key_id: key.id,
      key: key.key,
      website_id: site.id,
      tracking_script_id: site.tracking_script_id,
    };
  });
}

/** Another direct key with its own website under an existing account (e.g. a partner's own tracker). */
export async function createDirectKey({ ctx, input }: VerbArgs<{ accountId: string; domain: string }>) {
  const domain = normaliseTrackerDomain(input.domain, '--domain');
  return ctx.db.begin(async (tx) => {
    const [account] = await tx<{ id: string }>`
      select id from accounts where id::text = ${input.accountId} and not is_phantom`;
    if (!account) throw notFound(`no account ${input.accountId}`);
    const key = await insertKey(tx, ctx, account.id, { master: false });
    const site = await insertWebsite(tx, key.id, domain);
    return { api_key_id: key.id, key: key.key, website_id: site.id, tracking_script_id: site.tracking_script_id };
  });
}

/** Whether the database holds no account yet (first start). */
export async function isEmptyDatabase({ ctx }: VerbArgs<Record<string, never>>): Promise<boolean> {
  const [row] = await ctx.db<{ empty: boolean }>`select not exists (select 1 from accounts) as empty`;
  return row?.empty ?? true;
}

async function poolOf(ctx: CoreDeps, accountId: string): Promise<string> {
  const [p] = await ctx.db<{ id: string }>`select id from pools where account_id::text = ${accountId}`;
  if (!p) throw notFound(`account ${accountId} has no pool`);
  return p.id;
}

/** Auto-reload settings of a pool; any subset changes. */
export async function configureAutoReload({
  ctx,
  input,
}: VerbArgs<{ accountId: string; enabled?: boolean; thresholdIds?: number; topupAmountIds?: number; paymentMethodId?: string; customerId?: string }>) {
  const poolId = await poolOf(ctx, input.accountId);
  const [row] = await sqlCall(
    () => ctx.db<{ enabled: boolean; threshold_ids: number | null; topup_amount_ids: number | null; payment_method_id: string | null }>`
      update pools set
        auto_reload_enabled = coalesce(${input.enabled ?? null}::boolean, auto_reload_enabled),
        auto_reload_threshold_ids = coalesce(${input.thresholdIds ?? null}::int, auto_reload_threshold_ids),
        auto_reload_topup_amount_ids = coalesce(${input.topupAmountIds ?? null}::int, auto_reload_topup_amount_ids),
        payment_method_id = coalesce(${input.paymentMethodId ?? null}::text, payment_method_id),
        payment_customer_id = coalesce(${input.customerId ?? null}::text, payment_customer_id),
        -- A new card starts a new decline streak.
        consecutive_declines = case when ${input.paymentMethodId ?? null}::text is null then consecutive_declines else 0 end
      where id = ${poolId}
      returning auto_reload_enabled as enabled, auto_reload_threshold_ids as threshold_ids,
                auto_reload_topup_amount_ids as topup_amount_ids, payment_method_id`,
  );
  return { account_id: input.accountId, auto_reload: row };
}

/** Billing mode, per-ID rate and saved card of a pool. */
export async function setBilling({
  ctx,
  input,
}: VerbArgs<{ accountId: string; mode?: 'prepaid' | 'invoice_monthly'; perIdPence?: number; card?: string; quota?: number }>) {
  const poolId = await poolOf(ctx, input.accountId);
  const [row] = await sqlCall(
    () => ctx.db<{ pool_billing_mode: string; partner_per_id_pence: number | null; payment_method_id: string | null; monthly_id_quota: number }>`
      update pools set
        pool_billing_mode = coalesce(${input.mode ?? null}::text, pool_billing_mode),
        partner_per_id_pence = coalesce(${input.perIdPence ?? null}::numeric, partner_per_id_pence),
        payment_method_id = coalesce(${input.card ?? null}::text, payment_method_id),
        -- Like a child's: an increase applies now, a decrease waits for the next period.
        monthly_id_quota = greatest(monthly_id_quota, coalesce(${input.quota ?? null}::int, monthly_id_quota)),
        pending_monthly_id_quota = case
          when ${input.quota ?? null}::int is null then pending_monthly_id_quota
          when ${input.quota ?? null}::int < monthly_id_quota then ${input.quota ?? null}::int
          else null end
      where id = ${poolId}
      returning pool_billing_mode, partner_per_id_pence::float8 as partner_per_id_pence, payment_method_id, monthly_id_quota`,
  );
  return { account_id: input.accountId, pool: row };
}

/** Records an outstanding invoice against a pool (e.g. one raised outside Sightline). */
export async function recordInvoice({ ctx, input }: VerbArgs<{ accountId: string; amountPence: number; ids?: number }>) {
  const poolId = await poolOf(ctx, input.accountId);
  const [row] = await ctx.db<{ id: string }>`
    insert into invoices (pool_id, period_start, period_end, ids_used, amount_pence)
    select id, coalesce(current_period_start, now()), now(), ${input.ids ?? 0}, ${input.amountPence}
    from pools where id = ${poolId}
    returning id`;
  return { invoice_id: row?.id, status: 'outstanding' };
}

export async function settleInvoice({ ctx, input }: VerbArgs<{ invoiceId: string }>) {
  const [row] = await ctx.db<{ id: string; status: string }>`
    update invoices set status = 'paid', settled_at = now()
    where id::text = ${input.invoiceId} and status = 'outstanding'
    returning id, status`;
  if (!row) throw notFound(`no outstanding invoice ${input.invoiceId}`);
  return { invoice_id: row.id, status: row.status };
}
