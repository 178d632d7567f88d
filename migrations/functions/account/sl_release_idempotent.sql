-- Forgets a request that was refused before it changed anything, so the key may be used again.
create or replace function sl_release_idempotent(p_account uuid, p_key uuid) returns void
language sql as $$
  delete from idempotent_requests where account_id = p_account and idempotency_key = p_key and state = 'processing'
$$;
