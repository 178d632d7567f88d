/* One attempt's record: sl_record_deliveries of one, so the rules are written once. */
create or replace function sl_record_delivery(
  p_event uuid, p_attempt integer, p_owner uuid, p_now timestamptz, p_status_code integer, p_error text, p_duration_ms integer
) returns text
language sql as $$
  select r.delivery_status from sl_record_deliveries(p_now, jsonb_build_array(jsonb_build_object(
    'event_id', p_event, 'owner', p_owner, 'attempt', p_attempt, 'status_code', p_status_code, 'error', p_error,
    'duration_ms', p_duration_ms))) r
$$;
