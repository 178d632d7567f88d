-- Common data of child.suspended / child.reactivated.
create or replace function sl_balance_data(p_child uuid, p_reason text) returns jsonb
language plpgsql stable as $$
begin
  return (
    select jsonb_build_object(
      'child_api_key_id', s.api_key_id,
      'ids_used_this_period', s.ids_used_this_period,
      'monthly_id_quota', s.monthly_id_quota,
      'topup_balance', s.topup_balance,
      'reason', p_reason)
    from child_subscriptions s where s.api_key_id = p_child);
end
$$;
