import type { VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';

/**
 * Operator: starts (or extends, or shortens) an account's trial so it ends `days` days from now;
 * 0 ends it now (is_trial false, trial_ends_at kept as the moment it ended).
 */
export async function setTrial({ ctx, input }: VerbArgs<{ accountId: string; days: number }>) {
  const [row] = await ctx.db<{ trial_ends_at: string; is_trial: boolean }>`
    update accounts set trial_ends_at = now() + ${input.days} * interval '1 day'
    where id = ${input.accountId}
    returning sl_iso(trial_ends_at) as trial_ends_at, trial_ends_at > now() as is_trial`;
  if (!row) throw notFound(`no account ${input.accountId}`);
  return { account_id: input.accountId, ...row };
}
