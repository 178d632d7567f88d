import { z } from '@hono/zod-openapi';
import type { KeyRecord, VerbArgs } from '../kernel/context.ts';
import { queryInteger, Uuid, whenGiven } from '../kernel/schemas.ts';
import { OutboxDelivery, type OutboxRow, outboxDeliveryOf } from '../webhooks/outbox-row.ts';

export const ListIntegrationDeliveriesInput = z.object({
  integration_id: Uuid.optional(),
  status: z.enum(['pending', 'delivered', 'failed', 'no_destination'], whenGiven('must be pending, delivered, failed or no_destination')).optional(),
  limit: queryInteger({ min: 1, max: 200, message: 'must be between 1 and 200' })
    .optional()
    .openapi({ type: 'integer', minimum: 1, maximum: 200, description: '1 to 200, default 50' }),
  before: Uuid.optional().openapi({ description: 'A delivery id from the previous page: returns older deliveries' }),
});
export type ListIntegrationDeliveriesInput = z.infer<typeof ListIntegrationDeliveriesInput>;

export const IntegrationDelivery = z.object({ id: Uuid, integration_id: Uuid, signal: z.string(), ...OutboxDelivery }).openapi('IntegrationDelivery');

export const IntegrationDeliveries = z.object({ deliveries: z.array(IntegrationDelivery) });

interface Row extends OutboxRow {
  id: string;
  integration_id: string;
  event: string;
}

/**
 * integration-deliveries: the account's alerts and CRM pushes, newest first, as the outbox
 * holds them (status, attempts, last error, the signal sent). Pages with `before`.
 */
export async function listIntegrationDeliveries({
  ctx,
  input,
}: VerbArgs<ListIntegrationDeliveriesInput & { key: KeyRecord }>): Promise<z.infer<typeof IntegrationDeliveries>> {
  const rows = await ctx.db<Row>`
    select e.id, e.integration_id, e.event, e.created_at, e.delivery_status, e.attempts, e.last_attempt_at,
           case when e.delivery_status = 'pending' then e.next_attempt_at end as next_attempt_at, e.delivered_at, e.last_error, e.body
    from events e
    where e.integration_id in (select g from sl_key_integrations(${input.key.apiKeyId}) g
                               where ${input.integration_id ?? null}::uuid is null or g = ${input.integration_id ?? null}::uuid)
      and (${input.status ?? null}::text is null or e.delivery_status = ${input.status ?? null}::text)
      and (${input.before ?? null}::uuid is null or e.seq < (select seq from events where id = ${input.before ?? null}::uuid))
    order by e.seq desc
    limit ${input.limit ?? 50}`;
  return {
    deliveries: rows.map((r) => ({ id: r.id, integration_id: r.integration_id, signal: r.event, ...outboxDeliveryOf(r) })),
  };
}
