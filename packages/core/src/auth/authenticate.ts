import type { AccountKeyCaller, CoreDeps, KeyRecord, KeyScope, PartnerCaller, VerbArgs } from '../kernel/context.ts';
import { isWellFormedApiKey } from '../kernel/crypto.ts';
import { forbidden, unauthorized } from '../kernel/errors.ts';

interface KeyRow {
  id: string;
  account_id: string;
  status: KeyRecord['status'];
  is_partner_master: boolean;
  parent_api_key_id: string | null;
  is_partner: boolean;
  scope: KeyScope;
}

/**
 * Resolves `x-access-key` to its key record. Missing, malformed (bad checksum), unknown and
 * revoked keys are 401. The record comes from the auth cache when the process has one (see
 * auth-cache.ts for why a rotation or revocation still takes effect the moment it commits), else
 * from the database by keyed hash.
 */
export async function findKeyRecord({ ctx, input }: VerbArgs<{ key: string | undefined }>): Promise<KeyRecord> {
  const key = input.key?.trim();
  if (!key) throw unauthorized('missing x-access-key header');
  const cache = ctx.authCache;
  // Only keys that passed the checks below and were found are ever cached.
  let record = cache?.get(key);
  if (!record) {
    if (!isWellFormedApiKey(key)) throw unauthorized('x-access-key is not a valid API key');
    const generation = cache?.begin() ?? 0;
    const hash = await ctx.keyring.hashApiKey(key);
    const [row] = await ctx.db<KeyRow>`
      select k.id, k.account_id, k.status, k.is_partner_master, k.parent_api_key_id, a.is_partner, k.scope
      from api_keys k join accounts a on a.id = k.account_id
      where k.key_hash = ${hash}`;
    if (!row) throw unauthorized('x-access-key is not a valid API key');
    // Frozen: one cached record is shared by every request that presents the key.
    record = Object.freeze({
      apiKeyId: row.id,
      accountId: row.account_id,
      status: row.status,
      isPartner: row.is_partner,
      isPartnerMaster: row.is_partner_master,
      parentApiKeyId: row.parent_api_key_id,
      scope: row.scope,
    });
    cache?.store(key, record, generation);
  }
  if (record.status === 'revoked') throw unauthorized('this API key has been revoked');
  return record;
}

/** Any key of an account that is not revoked (a suspended key still reads and looks up). */
export async function authenticateKey(args: VerbArgs<{ key: string | undefined }>): Promise<AccountKeyCaller> {
  return { kind: 'account-key', ...(await findKeyRecord(args)) };
}

/**
 * Whether the key acts on its account (connect links, x-user-id calls, lookups the account pays
 * for): only a key scoped to it. A record without a scope (written by hand) does not.
 */
export const actsOnAccount = (key: KeyRecord): boolean => key.scope === 'account';

export const WEBSITES_SCOPE_MESSAGE = 'this key is scoped to its own websites and cannot act on the account';

/**
 * A key that acts on its account: any key that is not revoked, except one scoped to its own
 * websites (a released child's key, a partner's tracker key), which is a 403 — decided here, before
 * the route reads anything or the call is counted.
 */
export async function findAccountActorKey(args: VerbArgs<{ key: string | undefined }>): Promise<KeyRecord> {
  const record = await findKeyRecord(args);
  if (!actsOnAccount(record)) throw forbidden(WEBSITES_SCOPE_MESSAGE);
  return record;
}

/** `findAccountActorKey` as the caller of an account-key route. */
export async function authenticateAccountActor(args: VerbArgs<{ key: string | undefined }>): Promise<AccountKeyCaller> {
  return { kind: 'account-key', ...(await findAccountActorKey(args)) };
}

/**
 * Partner endpoints: the key must be active, belong to a partner account and be that account's
 * designated master key (spec, Authentication rule 3).
 */
export async function authenticatePartner(args: VerbArgs<{ key: string | undefined }, CoreDeps>): Promise<PartnerCaller> {
  const record = await findKeyRecord(args);
  if (record.status !== 'active') throw unauthorized('this API key is inactive (suspended)');
  if (!record.isPartner) throw forbidden('this account is not a partner account');
  if (!record.isPartnerMaster) throw forbidden('this key is not the designated partner master key');
  return { kind: 'partner', ...record };
}
