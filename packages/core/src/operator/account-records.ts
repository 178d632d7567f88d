import type { CoreDeps } from '../kernel/context.ts';
import { generateApiKey, keyPrefixOf } from '../kernel/crypto.ts';
import { badRequest, notFound } from '../kernel/errors.ts';
import type { Sql } from '../kernel/sql.ts';

/** The rows an operator verb writes for an account: a key, a website, and its pool's id. */

/**
 * A new key of `accountId`. The database gives it its scope (migration 0028, sl_key_scope): a
 * partner's master key and a direct account's keys act on the account; any other key of a partner
 * account (the partner's own trackers) reads only its own websites.
 */
export async function insertKey(tx: Sql, ctx: CoreDeps, accountId: string, opts: { master: boolean }): Promise<{ id: string; key: string }> {
  const key = generateApiKey();
  const hash = await ctx.keyring.hashApiKey(key);
  const [row] = await tx<{ id: string }>`
    insert into api_keys (account_id, key_hash, key_prefix, is_partner_master)
    values (${accountId}, ${hash}, ${keyPrefixOf(key)}, ${opts.master})
    returning id`;
  if (!row) throw new Error('api key insert returned no row');
  return { id: row.id, key };
}

export async function insertWebsite(tx: Sql, apiKeyId: string, domain: string) {
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

export async function poolOf(ctx: CoreDeps, accountId: string): Promise<string> {
  const [p] = await ctx.db<{ id: string }>`select id from pools where account_id::text = ${accountId}`;
  if (!p) throw notFound(`account ${accountId} has no pool`);
  return p.id;
}
