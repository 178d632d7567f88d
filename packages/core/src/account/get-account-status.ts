import { z } from '@hono/zod-openapi';
import type { VerbArgs } from '../context.ts';
import { notFound } from '../errors.ts';
import { Timestamp } from '../schemas.ts';

/** Account status (spec: balance, seats_used, is_trial, trial_ends_at). */
export const AccountStatus = z
  .object({
    balance: z.number().int().openapi({ description: 'Credits available' }),
    seats_used: z.number().int().openapi({ description: 'Users connected to the account (status connected)' }),
    is_trial: z.boolean().openapi({ description: 'trial_ends_at is in the future' }),
    trial_ends_at: Timestamp.nullable().openapi({ description: 'When the trial ends (or ended); null when the account never had one' }),
  })
  .openapi('AccountStatus');
export type AccountStatus = z.infer<typeof AccountStatus>;

/** api-account-status: one read of the account row and its seat count, judged by the database's clock. */
export async function getAccountStatus({ ctx, input }: VerbArgs<{ accountId: string }>): Promise<AccountStatus> {
  const [row] = await ctx.db<{ balance: number; seats_used: number; is_trial: boolean; trial_ends_at: string | null }>`
    select a.credit_balance as balance,
           (select count(*)::int from connected_users u where u.account_id = a.id and u.status = 'connected') as seats_used,
           coalesce(a.trial_ends_at > now(), false) as is_trial,
           sl_iso(a.trial_ends_at) as trial_ends_at
    from accounts a where a.id = ${input.accountId}`;
  if (!row) throw notFound(`no account ${input.accountId}`);
  return row;
}
