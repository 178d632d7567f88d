/* One identification, settled as sl_settle_identifications settles a batch (in the same lock order). */
create or replace function sl_settle_identification(p_id uuid, p_result jsonb, p_cache jsonb, p_ttl interval)
returns table (outcome text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language sql as $$
  select s.outcome, s.reload_pool_id, s.partner_account_id, s.emitted
  from sl_settle_identifications(jsonb_build_array(jsonb_build_object('id', p_id, 'result', p_result, 'cache', p_cache)), p_ttl) s
$$;
