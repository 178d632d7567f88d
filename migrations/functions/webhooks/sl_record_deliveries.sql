/*
 * Records the outcomes of many attempts at once: p_attempts is a JSON array of
 * {event_id, owner, attempt, status_code, error, duration_ms} and, for integrations' deliveries,
 * retry_after_ms, permanent and external_id. An attempt counts only if its owner still holds the
 * event's lease (and so the event is pending: events_leased_only_while_pending) and it is the
 * event's next attempt; then 2xx → delivered, otherwise the next attempt is due 1, 5 or 30 minutes
 * later (or when the destination's Retry-After says, if later), and after the 4th (or an answer
 * that retrying cannot change: `permanent`) the event stays `failed` and is never retried
 * automatically. Then each integration concerned (sl_note_integration_outcomes) counts its
 * failures in a row, pauses at its threshold, and a CRM push marks its visitor.
 * All at one time: p_now, or the database's clock. Returns every given event with its
 * delivery_status after the record, or null where nothing was recorded (its lease was taken over,
 * or this attempt was recorded already: a second record of it changes nothing).
 */
create or replace function sl_record_deliveries(p_now timestamptz, p_attempts jsonb)
returns table (event_id uuid, delivery_status text)
language plpgsql as $$
#variable_conflict use_column
declare
  -- To the millisecond, like every time the API shows (and sl_emit's).
  v_now timestamptz := coalesce(p_now, date_trunc('milliseconds', clock_timestamp()));
  v_ids uuid[];
  v_out jsonb;
begin
  select array_agg(i.event_id) into v_ids from jsonb_to_recordset(p_attempts) as i(event_id uuid);
  -- In id order, as every record locks (see the header).
  perform 1 from events e where e.id = any(v_ids) order by e.id for update;

  with input as (
    select i.*, i.status_code between 200 and 299 as succeeded
    from jsonb_to_recordset(p_attempts) as i(
      event_id uuid, owner uuid, attempt integer, status_code integer, error text, duration_ms integer,
      retry_after_ms integer, permanent boolean, external_id text)
  ), recorded as (
    update events e set
      attempts = i.attempt,
      last_attempt_at = v_now,
      last_error = case when i.succeeded then null else coalesce(i.error, 'HTTP ' || i.status_code) end,
      lease_until = null,
      lease_owner = null,
      delivery_status = case when i.succeeded then 'delivered' when i.attempt >= 4 or i.permanent then 'failed' else 'pending' end,
      delivered_at = case when i.succeeded then v_now else null end,
      next_attempt_at = case
        when i.succeeded or i.attempt >= 4 or i.permanent then null
        else greatest(
          v_now + (array[interval '1 minute', interval '5 minutes', interval '30 minutes'])[i.attempt],
          v_now + least(coalesce(i.retry_after_ms, 0), 86400000) * interval '1 millisecond') end
    from input i
    -- By primary key. Naming the status here as well would let the planner, without statistics
    -- (a new table), pick an index of pending events and read all of them.
    where e.id = any(v_ids) and e.id = i.event_id and e.lease_owner = i.owner and e.attempts = i.attempt - 1
    returning e.id, e.delivery_status, e.integration_id, e.body, i.attempt, i.status_code, i.error, i.duration_ms, i.succeeded,
      i.external_id
  ), logged as (
    update webhook_attempts w set finished_at = v_now, status_code = r.status_code, error = r.error,
      duration_ms = r.duration_ms, succeeded = r.succeeded
    from recorded r
    where w.event_id = r.id and w.attempt = r.attempt
    returning w.event_id
  )
  select coalesce(jsonb_agg(jsonb_build_object(
    'event_id', i.event_id, 'delivery_status', r.delivery_status, 'integration_id', r.integration_id, 'succeeded', r.succeeded,
    'error', r.error, 'external_id', r.external_id, 'body', case when r.integration_id is not null then r.body::jsonb end)), '[]'::jsonb)
  into v_out
  from input i left join recorded r on r.id = i.event_id;

  -- After the events' update (not in it: a pause settles the integration's other pending events).
  perform sl_note_integration_outcomes(coalesce(
    (select jsonb_agg(x order by x->>'integration_id', x->>'event_id') from jsonb_array_elements(v_out) x
     where x->>'integration_id' is not null), '[]'::jsonb));
  return query select (x->>'event_id')::uuid, x->>'delivery_status' from jsonb_array_elements(v_out) x;
end
$$;
