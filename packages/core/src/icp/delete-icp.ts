import type { VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import type { IcpDeleted } from './schemas.ts';

/**
 * Deletes an ICP of the account in any state, with its scores (sl_delete_icp); this frees a place
 * under the plan limit. An unknown ICP is a 404 (so is one deleted already), another account's a 403.
 */
export async function deleteIcp({ ctx, input }: VerbArgs<{ accountId: string; icpId: string }>): Promise<IcpDeleted> {
  await sqlCall(() => ctx.db`select sl_delete_icp(${input.accountId}::uuid, ${input.icpId}::uuid)`);
  return { icp_id: input.icpId, deleted: true };
}
