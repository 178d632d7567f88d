-- Lifts a quota-exhausted suspension when the child can consume again; emits child.reactivated.
create or replace function sl_reactivate_if_able(p_partner uuid, p_child uuid, p_reason text, p_emit boolean default true)
returns boolean
language plpgsql as $$
declare
  v_reactivated boolean;
begin
  update api_keys k set status = 'active', suspended_reason = null
  from child_subscriptions s
  where k.id = p_child and s.api_key_id = k.id
    and k.status = 'suspended' and k.suspended_reason = 'quota_exhausted'
    and (s.ids_used_this_period < s.monthly_id_quota or s.topup_balance > 0)
  returning true into v_reactivated;
  if v_reactivated and p_emit then
    perform sl_emit(p_partner, p_child, 'child.reactivated', sl_balance_data(p_child, p_reason));
  end if;
  return coalesce(v_reactivated, false);
end
$$;
