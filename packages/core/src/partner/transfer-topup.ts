import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import { Uuid, whenGiven } from '../kernel/schemas.ts';

export const TransferTopupInput = z
  .object({
    child_api_key_id: Uuid,
    amount: z
      .number(whenGiven('must be a positive integer'))
      .int('must be a positive integer')
      .positive('must be a positive integer')
      .max(1_000_000_000),
  })
  .strict()
  .openapi('TransferTopupRequest');
export type TransferTopupInput = z.infer<typeof TransferTopupInput>;

export const TopupTransferred = z.object({
  partner_topup_balance: z.number().int(),
  child_topup_balance: z.number().int(),
  transferred: z.number().int(),
});
export type TopupTransferred = z.infer<typeof TopupTransferred>;

/** partner-transfer-topup: pool top-up → child top-up, both or neither. */
export async function transferTopup({ ctx, input }: VerbArgs<TransferTopupInput, PartnerCtx>): Promise<TopupTransferred> {
  const [row] = await sqlCall(
    () => ctx.db<{ partner_topup_balance: number; child_topup_balance: number }>`
      select * from sl_transfer_topup(${ctx.caller.apiKeyId}, ${input.child_api_key_id}, ${input.amount})`,
    { 402: 'insufficient_topup' },
  );
  if (!row) throw new Error('sl_transfer_topup returned no row');
  return { partner_topup_balance: row.partner_topup_balance, child_topup_balance: row.child_topup_balance, transferred: input.amount };
}
