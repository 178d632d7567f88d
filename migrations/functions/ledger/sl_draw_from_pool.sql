/*
 * Draws one ID from the pool of account p_account (locking it): quota, then top-up, then (monthly
 * invoice only) overage; o_source is null when a prepaid pool is empty. o_reload is true when this
 * call claimed an auto-reload, which it tries only when the pool is below its threshold.
 */
create or replace function sl_draw_from_pool(p_account uuid, out o_pool uuid, out o_source text, out o_reload boolean)
language plpgsql as $$
declare
  p pools;
begin
  o_reload := false;
  select * into p from pools where account_id = p_account for update;
  if p.id is null then
    return;
  end if;
  o_pool := p.id;
  if p.ids_used_this_period < p.monthly_id_quota then
    update pools set ids_used_this_period = ids_used_this_period + 1 where id = p.id;
    o_source := 'quota';
    p.ids_used_this_period := p.ids_used_this_period + 1;
  elsif p.topup_balance > 0 then
    update pools set topup_balance = topup_balance - 1 where id = p.id;
    o_source := 'topup';
    p.topup_balance := p.topup_balance - 1;
  elsif p.pool_billing_mode = 'invoice_monthly' then
    update pools set ids_used_this_period = ids_used_this_period + 1,
                     overage_ids_this_period = overage_ids_this_period + 1
    where id = p.id;
    o_source := 'overage';
  end if;
  if p.auto_reload_enabled and p.auto_reload_threshold_ids is not null
     and greatest(0, p.monthly_id_quota - p.ids_used_this_period) + p.topup_balance < p.auto_reload_threshold_ids then
    o_reload := sl_claim_reload(p.id);
  end if;
end
$$;
