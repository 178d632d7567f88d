-- Writes one event to the outbox with its envelope {event, timestamp, data}. An integration's
-- delivery names the integration (p_integration).
create or replace function sl_emit(
  p_partner uuid, p_child uuid, p_event text, p_data jsonb, p_destination text default 'partner', p_integration uuid default null
)
returns uuid
language plpgsql as $$
declare
  v_id uuid;
  v_at timestamptz := date_trunc('milliseconds', clock_timestamp());
  v_last text := current_setting('sl.last_event_at', true);
begin
  if v_last is not null and v_last <> '' and v_at <= v_last::timestamptz then
    v_at := v_last::timestamptz + interval '1 millisecond';
  end if;
  perform set_config('sl.last_event_at', v_at::text, true);
  insert into events (partner_account_id, child_api_key_id, destination, integration_id, event, body, delivery_status, next_attempt_at)
  values (
    p_partner, p_child, p_destination, p_integration, p_event,
    jsonb_build_object('event', p_event, 'timestamp', sl_iso(v_at), 'data', p_data)::text,
    case when sl_event_has_destination(p_destination, p_partner, p_child, p_integration) then 'pending' else 'no_destination' end,
    now()
  )
  returning id into v_id;
  return v_id;
end
$$;
