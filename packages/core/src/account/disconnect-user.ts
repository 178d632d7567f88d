import type { VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';

/**
 * Operator: a connected user stops acting for the account (their x-user-id is refused with a 403
 * from the next request on) and stops counting as a seat. Their row stays, so connecting the same
 * profile again through a new link gives back the same user id.
 */
export async function disconnectUser({ ctx, input }: VerbArgs<{ accountId: string; userId: string }>) {
  const [row] = await ctx.db<{ id: string; status: string }>`
    update connected_users set status = 'disconnected'
    where id = ${input.userId} and account_id = ${input.accountId}
    returning id, status`;
  if (!row) throw notFound(`no user ${input.userId} on account ${input.accountId}`);
  return { user_id: row.id, account_id: input.accountId, status: row.status };
}
