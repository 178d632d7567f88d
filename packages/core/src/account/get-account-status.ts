import { z } from '@hono/zod-openapi';
import type { VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';
import { Timestamp } from '../kernel/schemas.ts';

/** Account status (spec: balance, seats_used, is_trial, trial_ends_at). */
export const AccountStatus = z
  .object({
    balance: z.number().int().openapi({ description: 'Credits available' }),
    seats_used: z.number().int().openapi({ description: 'Users connected to the account (status connected)' }),
    is_trial: z.boolean().openapi({ description: 'trial_ends_at is in the future' }),
    trial_ends_at: Timestamp.nullable().openapi({ description: 'When the trial ends (or ended); null when the account never had one' }),
    auto_reload: z
      .object({
        enabled: z.boolean().openapi({ description: 'The account turned auto-reload on (api-update-settings)' }),
        threshold: z.number().int().openapi({ description: 'Credit balance below which a reload fires' }),
        can_fire: z.boolean().openapi({ description: 'A balance below the threshold would start a reload now' }),
        cannot_fire_because: z.string().nullable().openapi({ description: 'Why not, in words; null when it can fire' }),
      })
      .openapi({
        description:
          'Addition to the spec: credit auto-reload and whether it can fire. Enabled with no card set up is a valid state that explains why nothing refills.',
      }),
  })
  .openapi('AccountStatus');
export type AccountStatus = z.infer<typeof AccountStatus>;

interface StatusRow {
  balance: number;
  seats_used: number;
  is_trial: boolean;
  trial_ends_at: string | null;
  enabled: boolean;
  threshold: number;
  set_up: boolean;
  declines: number;
  retry_at: string | null;
  cooling_off: boolean;
}

/**
 * api-account-status: one read of the account row and its seat count, judged by the database's
 * clock. The auto-reload part mirrors what sl_after_balance_change requires before it claims a
 * reload: enabled, the operator's set-up (amount, price, card), and no decline cool-off running.
 */
export async function getAccountStatus({ ctx, input }: VerbArgs<{ accountId: string }>): Promise<AccountStatus> {
  const [row] = await ctx.db<StatusRow>`
    select a.credit_balance as balance,
           (select count(*)::int from connected_users u where u.account_id = a.id and u.status = 'connected') as seats_used,
           coalesce(a.trial_ends_at > now(), false) as is_trial,
           sl_iso(a.trial_ends_at) as trial_ends_at,
           a.auto_reload_enabled as enabled,
           a.auto_reload_threshold as threshold,
           (a.auto_reload_amount is not null and a.payment_method_id is not null and a.credit_price_pence is not null) as set_up,
           a.credit_reload_declines as declines,
           sl_iso(r.retry_at) as retry_at,
           coalesce(r.retry_at > now(), false) as cooling_off
    from accounts a
    cross join lateral (select a.credit_reload_declined_at
      + least(interval '24 hours', interval '1 hour' * power(2, greatest(a.credit_reload_declines - 1, 0))) as retry_at) r
    where a.id = ${input.accountId}`;
  if (!row) throw notFound(`no account ${input.accountId}`);
  const cannot = whyReloadCannotFire(row);
  return {
    balance: row.balance,
    seats_used: row.seats_used,
    is_trial: row.is_trial,
    trial_ends_at: row.trial_ends_at,
    auto_reload: { enabled: row.enabled, threshold: row.threshold, can_fire: cannot === null, cannot_fire_because: cannot },
  };
}

function whyReloadCannotFire(row: StatusRow): string | null {
  if (!row.enabled) return 'auto-reload is off';
  if (!row.set_up) return 'no payment method and reload amount are set up yet: the operator sets them, and until then nothing refills';
  if (row.cooling_off) {
    return `the last ${row.declines} charge(s) were declined: the next attempt is after ${row.retry_at}`;
  }
  return null;
}
