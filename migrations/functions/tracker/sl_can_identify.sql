/*
 * Whether an identification by key p_key could use an ID now: asked before the paid providers, so a
 * paused or exhausted child costs no provider calls (settling decides for real, under the locks).
 */
create or replace function sl_can_identify(p_key uuid) returns boolean
language sql stable as $$
  select case
    when k.status <> 'active' then false
    when s.id is not null then s.status = 'active' and (s.ids_used_this_period < s.monthly_id_quota or s.topup_balance > 0)
    when k.parent_api_key_id is not null then false
    when p.id is not null then p.pool_billing_mode = 'invoice_monthly' or p.ids_used_this_period < p.monthly_id_quota or p.topup_balance > 0
    else true
  end
  from api_keys k
  left join child_subscriptions s on s.api_key_id = k.id
  left join pools p on p.account_id = k.account_id and k.parent_api_key_id is null
  where k.id = p_key
$$;
