import { z } from '@hono/zod-openapi';
import { Timestamp } from '../kernel/schemas.ts';

/** What every listing of the outbox shows of an event's delivery (partner-list-events, integration-deliveries). */
export const OutboxDelivery = {
  created_at: Timestamp,
  delivery_status: z.enum(['pending', 'delivered', 'failed', 'no_destination']),
  attempts: z.number().int(),
  last_attempt_at: Timestamp.nullable(),
  next_attempt_at: Timestamp.nullable(),
  delivered_at: Timestamp.nullable(),
  last_error: z.string().nullable(),
  payload: z.object({ event: z.string(), timestamp: Timestamp, data: z.record(z.string(), z.unknown()) }),
};

/** An `events` row as those listings read it (next_attempt_at only while pending). */
export interface OutboxRow {
  created_at: Date;
  delivery_status: 'pending' | 'delivered' | 'failed' | 'no_destination';
  attempts: number;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  last_error: string | null;
  body: string;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/** The row's delivery as the API shows it: times in ISO 8601, the stored body parsed. */
export function outboxDeliveryOf(r: OutboxRow) {
  return {
    created_at: new Date(r.created_at).toISOString(),
    delivery_status: r.delivery_status,
    attempts: r.attempts,
    last_attempt_at: iso(r.last_attempt_at),
    next_attempt_at: iso(r.next_attempt_at),
    delivered_at: iso(r.delivered_at),
    last_error: r.last_error,
    payload: JSON.parse(r.body) as { event: string; timestamp: string; data: Record<string, unknown> },
  };
}
