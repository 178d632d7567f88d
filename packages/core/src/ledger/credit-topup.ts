import type { VerbArgs } from '../kernel/context.ts';
import { badRequest, notFound, sqlCall } from '../kernel/errors.ts';

/**
 * Credits a completed top-up purchase to a pool or a child, once per payment reference: a replayed
 * payment confirmation returns `credited: false` and changes nothing.
 */
export async function creditTopup({
  ctx,
  input,
}: VerbArgs<{
  paymentRef: string;
  poolAccountId?: string;
  childApiKeyId?: string;
  amount: number;
  source: 'operator' | 'purchase' | 'auto_reload';
}>) {
  if (!Number.isInteger(input.amount) || input.amount <= 0) throw badRequest('amount must be a positive integer');
  let poolId: string | null = null;
  if (input.poolAccountId) {
    const [p] = await ctx.db<{ id: string }>`select id from pools where account_id::text = ${input.poolAccountId}`;
    if (!p) throw notFound(`account ${input.poolAccountId} has no pool`);
    poolId = p.id;
  }
  if (!poolId && !input.childApiKeyId) throw badRequest('a top-up goes to a pool or to a child');
  const [row] = await sqlCall(
    () => ctx.db<{ credited: boolean }>`
      select sl_credit_topup(${input.paymentRef}, ${poolId}, ${input.childApiKeyId ?? null}, ${input.amount}, ${input.source}) as credited`,
  );
  return { credited: row?.credited ?? false };
}
