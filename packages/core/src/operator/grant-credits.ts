import type { VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';

/** Operator: add credits to an account (a `grant` transaction). */
export async function grantCredits({ ctx, input }: VerbArgs<{ accountId: string; credits: number }>) {
  const [row] = await sqlCall(() => ctx.db<{ balance: number }>`select sl_grant_credits(${input.accountId}::uuid, ${input.credits}) as balance`);
  return { account_id: input.accountId, credit_balance: row?.balance ?? 0 };
}
