/*
 * Beyond the spec: a partner replays one of its events — a new first attempt of the same stored
 * body (same bytes, so receivers deduplicate), with the full retry schedule again. With p_key,
 * a key replays one of its integrations' deliveries instead (sl_key_integrations; p_partner is then
 * not asked).
 */
create or replace function sl_replay_event(p_partner uuid, p_event uuid, p_key uuid default null) returns table (delivery_status text)
language plpgsql as $$
#variable_conflict use_column
declare
  e events;
begin
  select * into e from events where id = p_event for update;
  if e.id is null then
    raise exception 'no event %', p_event using errcode = 'SL404';
  end if;
  if p_key is not null then
    if e.integration_id is null or e.integration_id not in (select sl_key_integrations(p_key)) then
      raise exception 'no delivery % of this account''s integrations', p_event using errcode = 'SL404';
    end if;
  elsif e.partner_account_id is distinct from p_partner then
    raise exception 'event % belongs to another partner', p_event using errcode = 'SL403';
  end if;
  if not sl_event_has_destination(e.destination, e.partner_account_id, e.child_api_key_id, e.integration_id) then
    raise exception 'there is no webhook configured to replay event % to', p_event using errcode = 'SL409';
  end if;
  if e.delivery_status = 'pending' then
    raise exception 'event % is still being delivered', p_event using errcode = 'SL409';
  end if;
  update events set delivery_status = 'pending', attempts = 0, next_attempt_at = now(), lease_until = null,
    last_error = null, delivered_at = null
  where id = p_event;
  delete from webhook_attempts where event_id = p_event;
  return query select 'pending'::text;
end
$$;
