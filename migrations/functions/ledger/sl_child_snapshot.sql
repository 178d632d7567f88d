-- The child.created / child.adopted data shape.
create or replace function sl_child_snapshot(p_child uuid) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'child_api_key_id', k.id,
    'child_user_id', k.account_id,
    'name', k.name,
    'domain', w.domain,
    'tracking_script_id', w.tracking_script_id,
    'monthly_id_quota', s.monthly_id_quota,
    'current_period_end', sl_iso(s.current_period_end),
    'sub_status', s.status,
    'has_webhook', k.webhook_url is not null)
  from api_keys k
  join child_subscriptions s on s.api_key_id = k.id
  left join lateral (
    select domain, tracking_script_id from websites
    where api_key_id = k.id and status = 'active' order by created_at desc limit 1
  ) w on true
  where k.id = p_child
$$;
