-- Marks an auto-reload as in flight when the pool wants one; true means "charge now".
create or replace function sl_claim_reload(p_pool uuid) returns boolean
language plpgsql as $$
declare
  v_claimed boolean;
begin
  update pools set reload_started_at = now()
  where id = p_pool
    and auto_reload_enabled
    and payment_method_id is not null
    and partner_per_id_pence is not null
    and auto_reload_topup_amount_ids is not null
    and auto_reload_threshold_ids is not null
    and greatest(0, monthly_id_quota - ids_used_this_period) + topup_balance < auto_reload_threshold_ids
    and (reload_started_at is null or reload_started_at < now() - interval '10 minutes')
  returning true into v_claimed;
  return coalesce(v_claimed, false);
end
$$;
