-- An event emitted when its destination has no webhook (or its integration is gone or paused) is never sent.
create or replace function sl_event_has_destination(p_destination text, p_partner uuid, p_child uuid, p_integration uuid default null)
returns boolean
language plpgsql stable as $$
begin
  if p_destination = 'partner' then
    return exists (select 1 from accounts where id = p_partner and partner_webhook_url is not null);
  elsif p_destination = 'account' then
    return exists (select 1 from accounts where id = p_partner and webhook_url is not null);
  elsif p_destination = 'integration' then
    return exists (select 1 from integrations where id = p_integration and status = 'active');
  end if;
  return exists (select 1 from api_keys where id = p_child and webhook_url is not null);
end
$$;
