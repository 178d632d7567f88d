import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import { Uuid } from '../kernel/schemas.ts';

export const ReplayPartnerEventInput = z.object({ event_id: Uuid }).strict().openapi('ReplayEventRequest');
export type ReplayPartnerEventInput = z.infer<typeof ReplayPartnerEventInput>;

export const ReplayedEvent = z.object({ event_id: Uuid, delivery_status: z.literal('pending') });
export type ReplayedEvent = z.infer<typeof ReplayedEvent>;

/** Beyond the spec: a new first attempt of one of the caller's events, with the same body bytes. */
export async function replayPartnerEvent({ ctx, input }: VerbArgs<ReplayPartnerEventInput, PartnerCtx>): Promise<ReplayedEvent> {
  // sl_replay_event raises for anything it cannot queue, so a row back means the event is pending again.
  await sqlCall(() => ctx.db`select * from sl_replay_event(${ctx.caller.accountId}, ${input.event_id})`);
  return { event_id: input.event_id, delivery_status: 'pending' };
}
