/*
 * The same rollover for partner pools. On monthly-invoice billing the closing period's usage becomes
 * an invoice: overage IDs at partner_per_id_pence (nothing owed → recorded as paid).
 */
create or replace function sl_roll_over_pools(p_now timestamptz, p_limit integer)
returns integer
language plpgsql as $$
declare
  p record;
  v_amount numeric;
  v_count integer := 0;
begin
  for p in
    select * from pools
    where current_period_end <= p_now
    order by current_period_end
    limit p_limit
    for update skip locked
  loop
    if p.pool_billing_mode = 'invoice_monthly' then
      v_amount := p.overage_ids_this_period * coalesce(p.partner_per_id_pence, 0);
      insert into invoices (pool_id, period_start, period_end, ids_used, overage_ids, amount_pence, status, settled_at)
      values (p.id, p.current_period_start, p.current_period_end, p.ids_used_this_period, p.overage_ids_this_period,
              v_amount, case when v_amount > 0 then 'outstanding' else 'paid' end,
              case when v_amount > 0 then null else now() end);
    end if;
    update pools set
      ids_used_this_period = 0,
      overage_ids_this_period = 0,
      monthly_id_quota = coalesce(pending_monthly_id_quota, monthly_id_quota),
      pending_monthly_id_quota = null,
      current_period_start = greatest(p.current_period_end, p_now),
      current_period_end = greatest(p.current_period_end, p_now) + interval '30 days'
    where id = p.id;
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;
