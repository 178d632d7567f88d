import type { VerbArgs } from '../kernel/context.ts';
import { badRequest } from '../kernel/errors.ts';
import { normaliseTrackerDomain } from '../tracker/normalise-tracker-domain.ts';
import { insertKey, insertWebsite } from './account-records.ts';

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
