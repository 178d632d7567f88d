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
