import type { PartnerCtx, VerbArgs } from '../context.ts';
import { sqlCall } from '../errors.ts';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'no_destination';

export interface ListEventsInput {
  limit: number;
  status?: DeliveryStatus | undefined;
  child_api_key_id?: string | undefined;
  event?: string | undefined;
  before?: string | undefined;
}

interface EventRow {
  id: string;
  seq: number;
  event: string;
  child_api_key_id: string | null;
  created_at: Date;
  delivery_status: DeliveryStatus;
  attempts: number;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  last_error: string | null;
  body: string;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/**
 * Beyond the spec: the caller's recent events, newest first, with delivery status and attempts.
 * Pages with `before` (an event id from the previous page).
 */
export async function listPartnerEvents({ ctx, input }: VerbArgs<ListEventsInput, PartnerCtx>) {
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
    limit ${input.limit}`;
  return {
    success: true as const,
    events: rows.map((r) => ({
      id: r.id,
      event: r.event,
      child_api_key_id: r.child_api_key_id,
      created_at: new Date(r.created_at).toISOString(),
      delivery_status: r.delivery_status,
      attempts: r.attempts,
      last_attempt_at: iso(r.last_attempt_at),
      next_attempt_at: iso(r.next_attempt_at),
      delivered_at: iso(r.delivered_at),
      last_error: r.last_error,
      payload: JSON.parse(r.body) as { event: string; timestamp: string; data: Record<string, unknown> },
    })),
  };
}

/** Beyond the spec: a new first attempt of one of the caller's events, with the same body bytes. */
export async function replayPartnerEvent({ ctx, input }: VerbArgs<{ event_id: string }, PartnerCtx>) {
  const [row] = await sqlCall(
    () => ctx.db<{ delivery_status: DeliveryStatus }>`select * from sl_replay_event(${ctx.caller.accountId}, ${input.event_id})`,
  );
  return { success: true as const, event_id: input.event_id, delivery_status: row?.delivery_status ?? 'pending' };
}
