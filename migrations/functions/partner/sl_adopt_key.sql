/*
 * partner-adopt-existing-key: a direct key of the caller's own account becomes a managed child under
 * a new phantom user, with its own subscription. p_set_webhook overwrites the key's webhook.
 */

/*
 * partner-adopt-existing-key: a direct key of the caller's own account becomes a managed child under
 * a new phantom user, with its own subscription. p_set_webhook overwrites the key's webhook.
 * As 0002, and the key acts on its new (phantom) account, as every child key does.
 */
create or replace function sl_adopt_key(
  p_master uuid, p_key uuid, p_name text, p_quota integer, p_brand_name text,
  p_set_webhook boolean, p_webhook_url text, p_secret_sealed text
) returns table (
  api_key_id uuid, child_user_id uuid, status text, website_id uuid, tracking_script_id uuid, domain text,
  subscription_id uuid, monthly_id_quota integer, current_period_end timestamptz, sub_status text
)
language plpgsql as $$
#variable_conflict use_column
declare
  k api_keys;
  v_partner uuid := sl_partner_of(p_master);
  v_user uuid;
  v_site record;
begin
  select * into k from api_keys where api_keys.id = p_key for update;
  if k.id is null then
    raise exception 'no key with id %', p_key using errcode = 'SL404';
  end if;
  if k.id = p_master then
    raise exception 'the authenticating master key cannot adopt itself' using errcode = 'SL409';
  end if;
  if k.parent_api_key_id = p_master then
    raise exception 'key % is already a managed child of this partner', p_key using errcode = 'SL409';
  end if;
  if k.account_id <> v_partner then
    raise exception 'key % belongs to a different user', p_key using errcode = 'SL403';
  end if;
  if k.parent_api_key_id is not null then
    raise exception 'key % already has a parent', p_key using errcode = 'SL409';
  end if;
  if k.status <> 'active' then
    raise exception 'key % is not active (status %)', p_key, k.status using errcode = 'SL409';
  end if;
  select w.id, w.tracking_script_id, w.domain into v_site from websites w
  where w.api_key_id = p_key and w.status = 'active' order by w.created_at desc limit 1;
  if v_site.id is null then
    raise exception 'key % has no active website', p_key using errcode = 'SL409';
  end if;

  insert into accounts (name, is_phantom) values (p_name, true) returning accounts.id into v_user;
  update api_keys set
    account_id = v_user,
    parent_api_key_id = p_master,
    scope = 'account',
    name = p_name,
    brand_name = coalesce(p_brand_name, p_name),
    webhook_url = case when p_set_webhook then p_webhook_url else webhook_url end,
    webhook_secret_sealed = case when p_set_webhook then p_secret_sealed else webhook_secret_sealed end
  where api_keys.id = p_key;
  insert into child_subscriptions (api_key_id, kind, monthly_id_quota, current_period_end)
  values (p_key, 'managed_child', p_quota, now() + interval '30 days');

  perform sl_emit(v_partner, p_key, 'child.adopted', sl_child_snapshot(p_key));

  return query select p_key, v_user, 'active'::text, v_site.id, v_site.tracking_script_id, v_site.domain,
    s.id, s.monthly_id_quota, s.current_period_end, s.status
  from child_subscriptions s where s.api_key_id = p_key;
end
$$;
