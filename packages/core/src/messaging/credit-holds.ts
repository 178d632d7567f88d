import type { VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';

/**
 * Credits held for engine work in flight (table credit_holds, migration 0029). api-full-request
 * holds its whole cost before any provider or engine is called: the credits leave the balance at
 * once, under the account's row lock with the guard `balance >= cost`, so of any number of requests
 * racing for the same credits only those the balance pays for go on to the engine. The hold turns
 * into the usual debits in the transaction that stores the message (sl_complete_message), and goes
 * back to the balance when the work fails (releaseCreditHold) or when it expires — its worker died:
 * a live worker gives up well inside its idempotency lease, which is the hold's lifetime. Expired
 * holds go back at the account's next hold and by the minute sweep (releaseExpiredCreditHolds).
 */

export interface HoldCreditsInput {
  accountId: string;
  /** The request's x-idempotency-key: one hold per key (a repeat that takes the key over holds afresh). */
  idempotencyKey: string;
  amount: number;
  /** How long the hold stands unless settled or released: the request's idempotency lease. */
  ttlMs: number;
}

/**
 * Holds `amount` credits: a 402 AppError carrying `credits_required` and `credit_balance` (what the
 * account has to spend, holds of other requests already out of it) when the balance is short.
 * Returns the balance left.
 */
export async function holdCredits({ ctx, input }: VerbArgs<HoldCreditsInput>): Promise<number> {
  const [row] = await sqlCall(
    () => ctx.db<{ balance: number }>`
      select sl_hold_credits(${input.accountId}::uuid, ${input.idempotencyKey}::uuid, ${input.amount}::int, ${Math.ceil(input.ttlMs)}::int) as balance`,
  );
  return row?.balance ?? 0;
}

/** Gives a request's hold back to the balance, as if it had never been taken; false when it had none. */
export async function releaseCreditHold({ ctx, input }: VerbArgs<{ accountId: string; idempotencyKey: string }>): Promise<boolean> {
  const [row] = await ctx.db<{ released: boolean }>`
    select sl_release_credit_hold(${input.accountId}::uuid, ${input.idempotencyKey}::uuid) as released`;
  return row?.released === true;
}

/**
 * The sweep: holds past their expiry go back to their accounts, a bounded number of accounts per
 * statement (an account busy at that moment is skipped; its next hold or the next sweep does it).
 */
export async function releaseExpiredCreditHolds({ ctx, input }: VerbArgs<{ accounts?: number }>): Promise<{ released: number }> {
  const [row] = await ctx.db<{ released: number }>`select sl_release_expired_credit_holds(${input.accounts ?? 500}::int) as released`;
  return { released: row?.released ?? 0 };
}
