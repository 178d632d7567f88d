-- Stores the outcome, as part of the transaction that made it.
create or replace function sl_complete_idempotent(p_account uuid, p_key uuid, p_status integer, p_body text) returns void
language plpgsql as $$
begin
  update idempotent_requests
  set state = 'completed', response_status = p_status, response_body = p_body, completed_at = now(), lease_until = null
  where account_id = p_account and idempotency_key = p_key and state = 'processing';
  if not found then
    raise exception 'idempotent request % is not in progress', p_key using errcode = 'SL409';
  end if;
end
$$;
