import { z } from '@hono/zod-openapi';
import { startAfterWork } from '../kernel/after-work.ts';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import { Uuid } from '../kernel/schemas.ts';

export const ReplayIntegrationDeliveryInput = z.object({ delivery_id: Uuid }).strict().openapi('ReplayIntegrationDeliveryRequest');
export type ReplayIntegrationDeliveryInput = z.infer<typeof ReplayIntegrationDeliveryInput>;

export const ReplayedDelivery = z.object({ delivery_id: Uuid, delivery_status: z.literal('pending') });

/**
 * integration-delivery-replay: a new first attempt of one of the account's alerts or pushes, with
 * the same stored signal (sl_replay_event's rules: not while pending, and only to an active
 * integration), sent at once.
 */
export async function replayIntegrationDelivery({
  ctx,
  input,
}: VerbArgs<ReplayIntegrationDeliveryInput & { key: KeyRecord }>): Promise<z.infer<typeof ReplayedDelivery>> {
  await sqlCall(() => ctx.db`select * from sl_replay_event(null, ${input.delivery_id}, ${input.key.apiKeyId})`);
  const [owner] = await ctx.db<{ partner_account_id: string }>`select partner_account_id from events where id = ${input.delivery_id}`;
  if (owner) startAfterWork(ctx, 'webhook-delivery', { partnerAccountId: owner.partner_account_id });
  return { delivery_id: input.delivery_id, delivery_status: 'pending' };
}
