import type { VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';
import { normaliseTrackerDomain } from '../tracker/normalise-tracker-domain.ts';
import { insertKey, insertWebsite } from './account-records.ts';

/**
 * Another direct key with its own website under an existing account (e.g. a partner's own tracker).
 * In a partner account it reads only its own websites, since the master key alone acts on a partner
 * account; in a direct account it acts on the account, as the first key does (insertKey).
 */
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
