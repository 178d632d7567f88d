/*
 * An identified visitor came back after its account's quiet period (sl_fold_tracker_events):
 * `visitor_returned` to the child's webhook, with visitor_identified's data and when it was last seen
 * before (`previous_visit_at`), if the key has a webhook now (the rule visitor_identified follows),
 * and the signal to the account's integrations that take it.
 */
create or replace function sl_emit_visitor_returned(p_website uuid, p_ip inet, p_previous timestamptz) returns void
language plpgsql as $$
declare
  v_key uuid;
  v_partner uuid;
  v_identification uuid;
begin
  select w.api_key_id into v_key from websites w where w.id = p_website;
  select identification_id into v_identification from visitors where website_id = p_website and ip = p_ip;
  if v_key is null or v_identification is null then
    return;
  end if;
  v_partner := sl_events_owner(v_key);
  if sl_event_has_destination('child', v_partner, v_key) then
    perform sl_emit(v_partner, v_key, 'visitor_returned',
      sl_visitor_identified_data(v_identification) || jsonb_build_object('previous_visit_at', sl_iso(p_previous)), 'child');
  end if;
  perform sl_emit_signal(p_website, p_ip, 'visitor_returned');
end
$$;
