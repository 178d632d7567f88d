import type { VerbArgs } from '../kernel/context.ts';
import type { Icp } from './schemas.ts';

/** The account's ICPs in every state, oldest first (api-icp-action list_icps). */
export async function listIcps({ ctx, input }: VerbArgs<{ accountId: string }>): Promise<Icp[]> {
  const rows = await ctx.db<{ icp: Icp }>`
    select sl_icp_json(i) as icp from icps i where i.account_id = ${input.accountId}::uuid order by i.created_at, i.id`;
  return rows.map((r) => r.icp);
}
