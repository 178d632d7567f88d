-- A declined auto-reload charge: the streak grows, the in-flight mark is released.
create or replace function sl_record_reload_decline(p_pool uuid, p_payment_ref text, p_amount integer)
returns void
language plpgsql as $$
begin
  update pools set last_declined_at = now(), consecutive_declines = consecutive_declines + 1, reload_started_at = null
  where id = p_pool;
  insert into topups (pool_id, amount_ids, status, source, payment_intent_id)
  values (p_pool, p_amount, 'failed', 'auto_reload', p_payment_ref)
  on conflict (payment_intent_id) do nothing;
end
$$;
