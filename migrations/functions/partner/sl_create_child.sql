-- Creates a managed child in one transaction: phantom user, key, website, subscription, child.created.
-- Preconditions (pool funds, billing mode, domain free) are checked under a lock on the pool row so
-- two concurrent creates cannot both pass on the last funds.
create or replace function sl_create_child(
  p_master_key_id uuid,
  p_name text,
  p_domain text,
  p_quota integer,
  p_brand_name text,
  p_key_hash text,
  p_key_prefix text,
  p_webhook_url text,
  p_webhook_secret_sealed text
) returns table (
  api_key_id uuid, child_user_id uuid, website_id uuid, tracking_script_id uuid,
  subscription_id uuid, current_period_end timestamptz
)
language plpgsql as $$
#variable_conflict use_column
declare
  v_partner uuid;
  v_pool pools%rowtype;
  v_user uuid;
  v_key uuid;
  v_site uuid;
  v_script uuid;
  v_sub uuid;
  v_end timestamptz := now() + interval '30 days';
begin
  select k.account_id into v_partner from api_keys k where k.id = p_master_key_id;
  if v_partner is null then
    raise exception 'partner key not found' using errcode = 'SL404';
  end if;

  select * into v_pool from pools where account_id = v_partner for update;
  if not found then
    raise exception 'the partner has no pool subscription, so it cannot fund a child; ask the operator to create one'
      using errcode = 'SL402';
  end if;

  if v_pool.pool_billing_mode = 'prepaid' then
    if greatest(0, v_pool.monthly_id_quota - v_pool.ids_used_this_period) + v_pool.topup_balance = 0 then
      raise exception 'the prepaid pool has no IDs available; buy a top-up or wait for the next period'
        using errcode = 'SL402';
    end if;
  else
    if v_pool.payment_method_id is null then
      raise exception 'monthly-invoice billing needs a saved card before children can be created'
        using errcode = 'SL409';
    end if;
    if v_pool.partner_per_id_pence is null then
      raise exception 'monthly-invoice billing needs a per-ID rate before children can be created'
        using errcode = 'SL409';
    end if;
    if exists (select 1 from invoices i where i.pool_id = v_pool.id and i.status = 'outstanding') then
      raise exception 'an invoice is outstanding; settle it before creating children'
        using errcode = 'SL409';
    end if;
  end if;

  if exists (select 1 from websites w where w.domain = p_domain and w.status = 'active') then
    raise exception 'domain % is already registered on an active website', p_domain using errcode = 'SL409';
  end if;

  insert into accounts (name, is_phantom) values (p_name, true) returning id into v_user;

  insert into api_keys (account_id, key_hash, key_prefix, parent_api_key_id, name, brand_name,
                        webhook_url, webhook_secret_sealed)
  values (v_user, p_key_hash, p_key_prefix, p_master_key_id, p_name, coalesce(p_brand_name, p_name),
          p_webhook_url, p_webhook_secret_sealed)
  returning id into v_key;

  begin
    insert into websites (api_key_id, domain) values (v_key, p_domain)
    returning id, websites.tracking_script_id into v_site, v_script;
  exception when unique_violation then
    -- Lost a race with a concurrent create for the same domain.
    raise exception 'domain % is already registered on an active website', p_domain using errcode = 'SL409';
  end;

  insert into child_subscriptions (api_key_id, monthly_id_quota, current_period_end)
  values (v_key, p_quota, v_end)
  returning id into v_sub;

  perform sl_emit(v_partner, v_key, 'child.created', jsonb_build_object(
    'child_api_key_id', v_key,
    'child_user_id', v_user,
    'name', p_name,
    'domain', p_domain,
    'tracking_script_id', v_script,
    'monthly_id_quota', p_quota,
    'current_period_end', sl_iso(v_end),
    'sub_status', 'active',
    'has_webhook', p_webhook_url is not null
  ));

  return query select v_key, v_user, v_site, v_script, v_sub, v_end;
end
$$;
