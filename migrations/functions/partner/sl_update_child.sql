/*
 * partner-update-child. Null parameters mean "not given". Webhook: p_webhook_action keep | set | clear;
 * p_secret_action none | replace | keep_or_mint with p_secret_sealed as the candidate secret.
 */
create or replace function sl_update_child(
  p_master uuid, p_child uuid, p_name text, p_quota integer, p_status text, p_extend_days integer,
  p_webhook_action text, p_webhook_url text, p_secret_action text, p_secret_sealed text
) returns table (
  id uuid, user_id uuid, name text, status text, created_at timestamptz, webhook_url text,
  parent_api_key_id uuid, subscription_id uuid, kind text, monthly_id_quota integer,
  ids_used_this_period integer, topup_balance integer, current_period_end timestamptz,
  sub_status text, secret_replaced boolean
)
language plpgsql as $$
#variable_conflict use_column
declare
  s child_subscriptions;
  k api_keys;
  v_partner uuid := sl_partner_of(p_master);
  v_delta jsonb := '{}';
  v_new_end timestamptz;
  v_url text;
  v_secret text;
  v_replaced boolean := false;
  v_reactivated boolean := false;
  v_new_status text;
begin
  s := sl_lock_child(p_master, p_child);
  select * into k from api_keys where api_keys.id = p_child for update;

  if p_name is not null and p_name is distinct from k.name then
    update api_keys set name = p_name where api_keys.id = p_child;
    v_delta := v_delta || jsonb_build_object('name', p_name);
  end if;

  if p_quota is not null then
    if p_quota > s.monthly_id_quota then
      -- An increase applies now and cancels any queued decrease.
      update child_subscriptions set monthly_id_quota = p_quota, pending_monthly_id_quota = null where id = s.id;
      v_delta := v_delta || jsonb_build_object('monthly_id_quota', p_quota);
    elsif p_quota < s.monthly_id_quota then
      update child_subscriptions set pending_monthly_id_quota = p_quota where id = s.id;
    else
      update child_subscriptions set pending_monthly_id_quota = null where id = s.id;
    end if;
  end if;

  if p_extend_days is not null then
    v_new_end := greatest(s.current_period_end, now()) + make_interval(days => p_extend_days);
    update child_subscriptions set current_period_end = v_new_end where id = s.id;
    v_delta := v_delta || jsonb_build_object('current_period_end', sl_iso(v_new_end));
  end if;

  v_url := k.webhook_url;
  v_secret := k.webhook_secret_sealed;
  if p_webhook_action = 'clear' then
    v_url := null;
    v_secret := null;
  elsif p_webhook_action = 'set' then
    v_url := p_webhook_url;
    if p_secret_action = 'replace' or v_secret is null then
      v_secret := p_secret_sealed;
      v_replaced := true;
    end if;
  elsif p_secret_action = 'replace' then
    if v_url is null then
      raise exception 'webhook_secret needs a webhook_url: this child has none' using errcode = 'SL400';
    end if;
    v_secret := p_secret_sealed;
    v_replaced := true;
  end if;
  update api_keys set webhook_url = v_url, webhook_secret_sealed = v_secret where api_keys.id = p_child;
  if (v_url is null) <> (k.webhook_url is null) then
    v_delta := v_delta || jsonb_build_object('has_webhook', v_url is not null);
  end if;

  if p_status is not null then
    update api_keys set status = p_status,
                        suspended_reason = case when p_status = 'suspended' then 'manual' end
    where api_keys.id = p_child;
  elsif p_quota is not null then
    v_reactivated := sl_reactivate_if_able(v_partner, p_child, 'quota_increased', false);
  end if;

  select * into s from child_subscriptions where child_subscriptions.id = s.id;
  select status into v_new_status from api_keys where api_keys.id = p_child;
  if v_new_status <> k.status then
    v_delta := v_delta || jsonb_build_object('status', v_new_status);
  end if;
  select * into k from api_keys where api_keys.id = p_child;

  if v_delta <> '{}' then
    perform sl_emit(v_partner, p_child, 'child.updated', jsonb_build_object(
      'child_api_key_id', p_child,
      'delta', v_delta,
      'name', k.name,
      'status', k.status,
      'monthly_id_quota', s.monthly_id_quota,
      'ids_used_this_period', s.ids_used_this_period,
      'topup_balance', s.topup_balance,
      'current_period_end', sl_iso(s.current_period_end),
      'sub_status', s.status));
  end if;
  if v_reactivated then
    perform sl_emit(v_partner, p_child, 'child.reactivated', sl_balance_data(p_child, 'quota_increased'));
  end if;

  return query select k.id, k.account_id, k.name, k.status, k.created_at, k.webhook_url, k.parent_api_key_id,
    s.id, s.kind, s.monthly_id_quota, s.ids_used_this_period, s.topup_balance, s.current_period_end, s.status,
    v_replaced;
end
$$;
