import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { queryInteger, Uuid, whenGiven } from '../kernel/schemas.ts';
import { OutboxDelivery, type OutboxRow, outboxDeliveryOf } from '../webhooks/outbox-row.ts';

const DeliveryStatus = z.enum(
  ['pending', 'delivered', 'failed', 'no_destination'],
  whenGiven('must be pending, delivered, failed or no_destination'),
);
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

export const ListPartnerEventsInput = z.object({
  limit: queryInteger({ min: 1, max: 200, message: 'must be between 1 and 200' })
    .optional()
    .openapi({ type: 'integer', minimum: 1, maximum: 200, description: '1 to 200, default 50' }),
  status: DeliveryStatus.optional(),
  child_api_key_id: Uuid.optional(),
  event: z.string().max(100).optional().openapi({ example: 'child.suspended' }),
  before: Uuid.optional().openapi({ description: 'An event id from the previous page: returns older events' }),
});
export type ListPartnerEventsInput = z.infer<typeof ListPartnerEventsInput>;

export const PartnerEvent = z.object({ id: Uuid, event: z.string(), child_api_key_id: Uuid.nullable(), ...OutboxDelivery }).openapi('PartnerEvent');
export type PartnerEvent = z.infer<typeof PartnerEvent>;

export const PartnerEvents = z.object({ events: z.array(PartnerEvent) });
export type PartnerEvents = z.infer<typeof PartnerEvents>;

interface EventRow extends OutboxRow {
  id: string;
  seq: number;
  event: string;
  child_api_key_id: string | null;
}

/**
 * Beyond the spec: the caller's recent events, newest first, with delivery status and attempts.
 * Pages with `before` (an event id from the previous page); 50 a page unless `limit` says.
 */
export async function listPartnerEvents({ ctx, input }: VerbArgs<ListPartnerEventsInput, PartnerCtx>): Promise<PartnerEvents> {
  const rows = await ctx.db<EventRow>`
    select e.id, e.seq::float8 as seq, e.event, e.child_api_key_id, e.created_at, e.delivery_status, e.attempts,
           e.last_attempt_at, case when e.delivery_status = 'pending' then e.next_attempt_at end as next_attempt_at,
           e.delivered_at, e.last_error, e.body
    from events e
    where e.partner_account_id = ${ctx.caller.accountId} and e.destination = 'partner'
      and (${input.status ?? null}::text is null or e.delivery_status = ${input.status ?? null}::text)
      and (${input.child_api_key_id ?? null}::uuid is null or e.child_api_key_id = ${input.child_api_key_id ?? null}::uuid)
      and (${input.event ?? null}::text is null or e.event = ${input.event ?? null}::text)
      and (${input.before ?? null}::uuid is null
           or e.seq < (select seq from events where id = ${input.before ?? null}::uuid and partner_account_id = ${ctx.caller.accountId}))
    order by e.seq desc
    limit ${input.limit ?? 50}`;
  return {
    events: rows.map((r) => ({ id: r.id, event: r.event, child_api_key_id: r.child_api_key_id, ...outboxDeliveryOf(r) })),
  };
}
