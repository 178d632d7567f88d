import type { VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import { CreateIcpInput, checkedInput, ICP_FIELD_NAMES, type Icp } from './schemas.ts';

/**
 * create_icp: an ICP of the account, linked to one of its products, queued for generation
 * (workflow_status `generating`, review_status `pending_review`); the engine later fills only the
 * fields the caller left out (generate-icps.ts). One statement (sl_create_icp): the plan limit is
 * checked under the account's lock, so creates racing at the limit cannot both pass (403 naming
 * the plan and its limit); so is the account's hourly allowance of ICP generations when a field is
 * left to the engine (429, its wait in `extra.retry_after`); an unknown product is a 404, another
 * account's a 403. Run it in the transaction that stores the caller's answer (run-icp-action.ts).
 */
export async function createIcp({ ctx, input }: VerbArgs<{ accountId: string; icp: unknown }>): Promise<Icp> {
  const { product_id, qualify_threshold, ...rest } = checkedInput(CreateIcpInput, input.icp);
  // Only the fields given: their names are what generation leaves alone.
  const fields = Object.fromEntries(ICP_FIELD_NAMES.filter((k) => rest[k] !== undefined).map((k) => [k, rest[k]]));
  const [row] = await sqlCall(
    () => ctx.db<{ icp: Icp }>`
      select sl_create_icp(${input.accountId}::uuid, ${product_id}::uuid, ${JSON.stringify(fields)}::text::jsonb,
                           ${qualify_threshold ?? null}::int, null::uuid) as icp`,
    { 429: 'generation_limit' },
  );
  if (!row) throw new Error('sl_create_icp returned no row');
  return row.icp;
}
