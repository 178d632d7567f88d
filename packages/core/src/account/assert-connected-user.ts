import type { VerbArgs } from '../kernel/context.ts';
import { AppError } from '../kernel/errors.ts';

/**
 * Spec rule 2: an `x-user-id` acts for an account only once that user has connected to it through a
 * connect link. Anyone else — unknown, disconnected, or connected to another account — is a 403,
 * decided before the route does any work. The message does not say which, so an id of another
 * account cannot be probed.
 */
export async function assertConnectedUser({ ctx, input }: VerbArgs<{ accountId: string; userId: string }>): Promise<void> {
  const [user] = await ctx.db<{ ok: boolean }>`
    select true as ok from connected_users
    where id = ${input.userId} and account_id = ${input.accountId} and status = 'connected'`;
  if (!user) throw new AppError('forbidden', 'x-user-id is not a user connected to this account (connect them with a connect link first)');
}
