/*
 * Starts (or finds) the request with key p_key. outcome:
 *   started    – the caller does the work (a new key, or one whose worker's lease ran out);
 *   processing – another request with this key is at work (the caller answers 202);
 *   completed  – the stored response, to answer again as it is;
 *   mismatch   – the key was used for a different request.
 */
create or replace function sl_begin_idempotent(p_account uuid, p_key uuid, p_operation text, p_hash text, p_lease_ms integer)
returns table (outcome text, response_status integer, response_body text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_row idempotent_requests;
begin
  -- A loop, because the row this insert conflicted with can be gone by the time it is locked: the
  -- request holding it was refused and gave the key back. Then the key is free again: try again.
  loop
    insert into idempotent_requests (account_id, idempotency_key, operation, request_hash, lease_until)
    values (p_account, p_key, p_operation, p_hash, clock_timestamp() + p_lease_ms * interval '1 millisecond')
    on conflict do nothing;
    if found then
      return query select 'started'::text, null::integer, null::text;
      return;
    end if;
    select * into v_row from idempotent_requests where account_id = p_account and idempotency_key = p_key for update;
    exit when v_row.account_id is not null;
  end loop;
  if v_row.operation <> p_operation or v_row.request_hash <> p_hash then
    return query select 'mismatch'::text, null::integer, null::text;
  elsif v_row.state = 'completed' then
    return query select 'completed'::text, v_row.response_status, v_row.response_body;
  elsif v_row.lease_until > clock_timestamp() then
    return query select 'processing'::text, null::integer, null::text;
  else
    update idempotent_requests set lease_until = clock_timestamp() + p_lease_ms * interval '1 millisecond'
    where account_id = p_account and idempotency_key = p_key;
    return query select 'started'::text, null::integer, null::text;
  end if;
end
$$;
