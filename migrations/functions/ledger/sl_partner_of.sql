-- The partner account behind a master key.
create or replace function sl_partner_of(p_master uuid) returns uuid
language sql stable as $$ select account_id from api_keys where id = p_master $$;
