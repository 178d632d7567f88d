-- The ID ledger and the partner lifecycle: consumption, suspension and reactivation, updates,
-- adoption, rotation, transfers, release, top-ups, auto-reload bookkeeping and period rollover.
--
-- Locking: every function that changes a child locks that child's child_subscriptions row first; it
-- serialises everything about one child. Key and pool rows are locked only after it (and a pool row
-- is only ever held together with at most one child's rows), so concurrent consumers, transfers,
-- updates, releases and the rollover sweep wait for each other but never deadlock.

-- Why a key is suspended: only quota exhaustion is lifted automatically (quota increase, rollover,
-- top-up); a partner's manual suspension stays until the partner changes it.
alter table api_keys add column suspended_reason text
  check (suspended_reason in ('quota_exhausted', 'manual'));
update api_keys set suspended_reason = 'manual' where status = 'suspended';
alter table api_keys add constraint api_keys_suspended_reason_matches
  check ((status = 'suspended') = (suspended_reason is not null));

alter table child_subscriptions drop constraint child_subscriptions_kind_check;
alter table child_subscriptions add constraint child_subscriptions_kind_check
  check (kind in ('trial_child', 'managed_child', 'paid_child'));

alter table pools
  add column payment_customer_id text,
  -- Set while an auto-reload charge is in flight (one per pool); a stale mark expires after 10 minutes.
  add column reload_started_at timestamptz,
  -- IDs consumed beyond quota and top-up on monthly-invoice billing, invoiced at rollover.
  add column overage_ids_this_period integer not null default 0 check (overage_ids_this_period >= 0),
  add constraint pools_overage_only_on_invoice check (pool_billing_mode = 'invoice_monthly' or overage_ids_this_period = 0);

-- Receivers reconcile by the envelope timestamp; within one transaction several events can fall in
-- the same millisecond, so sl_emit (final form in 0003) keeps timestamps strictly increasing per
-- transaction, and `seq` gives the outbox a total order of insertion.
alter table events add column seq bigint generated always as identity;
create unique index events_seq on events (seq);


create table key_rotations (
  id              uuid primary key default gen_random_uuid(),
  api_key_id      uuid not null references api_keys (id) on delete cascade,
  old_key_prefix  text not null,
  rotated_at      timestamptz not null default now()
);
create index key_rotations_recent on key_rotations (api_key_id, rotated_at desc);

-- One row per ID consumed, saying what funded it; the balances are the sum of these movements.
create table id_ledger (
  id                bigint generated always as identity primary key,
  child_api_key_id  uuid,
  pool_id           uuid,
  child_source      text check (child_source in ('quota', 'topup')),
  pool_source       text check (pool_source in ('quota', 'topup', 'overage')),
  created_at        timestamptz not null default now(),
  -- A child's top-up IDs were paid for already; only quota-funded IDs draw on the pool.
  check (child_source is distinct from 'topup' or pool_source is null),
  check (child_source is not null or pool_source is not null)
);
create index id_ledger_child on id_ledger (child_api_key_id);

-- The partner account behind a master key.
create function sl_partner_of(p_master uuid) returns uuid
language sql stable as $$ select account_id from api_keys where id = p_master $$;

-- Common data of child.suspended / child.reactivated.
create function sl_balance_data(p_child uuid, p_reason text) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'child_api_key_id', s.api_key_id,
    'ids_used_this_period', s.ids_used_this_period,
    'monthly_id_quota', s.monthly_id_quota,
    'topup_balance', s.topup_balance,
    'reason', p_reason)
  from child_subscriptions s where s.api_key_id = p_child
$$;

-- Locks a managed child of p_master (subscription row first), or raises 404/403.
create function sl_lock_child(p_master uuid, p_child uuid) returns child_subscriptions
language plpgsql as $$
declare
  s child_subscriptions;
  v_parent uuid;
  v_exists boolean;
begin
  select * into s from child_subscriptions where api_key_id = p_child for update;
  select true, parent_api_key_id into v_exists, v_parent from api_keys where id = p_child;
  if v_exists is null then
    raise exception 'no child with api key id %', p_child using errcode = 'SL404';
  end if;
  if v_parent is null then
    raise exception 'key % is not a managed child', p_child using errcode = 'SL404';
  end if;
  if v_parent <> p_master then
    raise exception 'child % belongs to another partner', p_child using errcode = 'SL403';
  end if;
  if s.id is null then
    raise exception 'child % has no subscription', p_child using errcode = 'SL404';
  end if;
  return s;
end
$$;

-- Lifts a quota-exhausted suspension when the child can consume again; emits child.reactivated.
create function sl_reactivate_if_able(p_partner uuid, p_child uuid, p_reason text, p_emit boolean default true)
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

-- Marks an auto-reload as in flight when the pool wants one; true means "charge now".
create function sl_claim_reload(p_pool uuid) returns boolean
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


/*
 * Draws one ID from the pool of account p_account (locking it): quota, then top-up, then (monthly
 * invoice only) overage; o_source is null when a prepaid pool is empty. o_reload is true when this
 * call claimed an auto-reload, which it tries only when the pool is below its threshold.
 */
create function sl_draw_from_pool(p_account uuid, out o_pool uuid, out o_source text, out o_reload boolean)
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

/*
 * Consumes one ID for the tracker key p_key (one identification).
 * outcome: consumed | suspended | revoked | canceled | no_ids | pool_exhausted | not_metered | unknown_key
 * reload_pool_id: set when this call claimed an auto-reload for that pool (the caller charges it).
 * The common path is six statements: the child's subscription (locked) with its partner, the key's
 * status, the pool lock and update, the subscription update, and the ledger row.
 */
create function sl_consume_id(p_key uuid)
returns table (outcome text, child_source text, pool_source text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  r record;
  k api_keys;
  d record;
  v_partner uuid;
  v_pool uuid;
  v_child_src text;
  v_pool_src text;
  v_reload uuid;
  v_emitted boolean := false;
  v_suspend boolean := false;
begin
  select s.id as sub_id, s.ids_used_this_period as used, s.monthly_id_quota as quota, s.topup_balance as topup,
         s.status as sub_status, s.last_consumption_event_at as last_event, m.account_id as partner
  into r
  from child_subscriptions s
  join api_keys k on k.id = s.api_key_id
  join api_keys m on m.id = k.parent_api_key_id
  where s.api_key_id = p_key
  for update of s;

  if r.sub_id is null then
    select * into k from api_keys where id = p_key;
    if k.id is null then
      return query select 'unknown_key', null::text, null::text, null::uuid, null::uuid, false;
      return;
    end if;
    if k.parent_api_key_id is not null then
      -- A managed child without a subscription row: nothing to draw on.
      return query select case when k.status <> 'active' then k.status else 'not_metered' end, null::text, null::text, null::uuid, null::uuid, false;
      return;
    end if;
    -- A direct tracker: a partner's own trackers draw on its pool; other accounts are not metered here.
    if not exists (select 1 from pools where account_id = k.account_id) then
      return query select 'not_metered', null::text, null::text, null::uuid, null::uuid, false;
      return;
    end if;
    if k.status <> 'active' then
      return query select k.status, null::text, null::text, null::uuid, null::uuid, false;
      return;
    end if;
    select * into d from sl_draw_from_pool(k.account_id);
    if d.o_source is null then
      return query select 'pool_exhausted', null::text, null::text, case when d.o_reload then d.o_pool end, null::uuid, false;
      return;
    end if;
    insert into id_ledger (pool_id, pool_source) values (d.o_pool, d.o_source);
    return query select 'consumed', null::text, d.o_source, case when d.o_reload then d.o_pool end, null::uuid, false;
    return;
  end if;

  v_partner := r.partner;
  -- Read after the lock, in its own statement: a row joined to a locked one keeps the snapshot from
  -- before the wait, and the consumer we waited for may just have suspended this key.
  select * into k from api_keys where id = p_key;
  if k.status <> 'active' then
    return query select k.status, null::text, null::text, null::uuid, v_partner, false;
    return;
  end if;
  if r.sub_status = 'canceled' then
    return query select 'canceled', null::text, null::text, null::uuid, v_partner, false;
    return;
  end if;

  if r.used < r.quota then
    select * into d from sl_draw_from_pool(v_partner);
    v_reload := case when d.o_reload then d.o_pool end;
    if d.o_source is not null then
      update child_subscriptions set ids_used_this_period = ids_used_this_period + 1 where id = r.sub_id;
      v_child_src := 'quota';
      v_pool_src := d.o_source;
      v_pool := d.o_pool;
      v_suspend := r.used + 1 >= r.quota and r.topup = 0;
    elsif r.topup = 0 then
      -- The pool cannot fund the quota and the child owns nothing: no identification, no suspension
      -- (the pool ran out, not the child); a reload, if one can fire, is claimed for the caller.
      return query select 'pool_exhausted', null::text, null::text, v_reload, v_partner, false;
      return;
    end if;
    -- Otherwise the child's own top-up IDs are spent: they are paid for and need no pool.
  end if;

  if v_child_src is null then
    if r.topup = 0 then
      -- Active but nothing to spend (created with quota 0 and no top-up): paused, not suspended.
      return query select 'no_ids', null::text, null::text, null::uuid, v_partner, false;
      return;
    end if;
    update child_subscriptions
    set topup_balance = topup_balance - 1,
        last_consumption_event_at = case
          when last_consumption_event_at is null or last_consumption_event_at <= now() - interval '5 minutes'
          then now() else last_consumption_event_at end
    where id = r.sub_id;
    v_child_src := 'topup';
    v_suspend := r.topup - 1 = 0 and r.used >= r.quota;
    -- Throttled to one per child per 5 minutes; the delta covers only this consumption.
    if r.last_event is null or r.last_event <= now() - interval '5 minutes' then
      perform sl_emit(v_partner, p_key, 'child.topup_changed', jsonb_build_object(
        'child_api_key_id', p_key,
        'previous_topup_balance', r.topup,
        'topup_balance', r.topup - 1,
        'delta', -1,
        'reason', 'consumption'));
      v_emitted := true;
    end if;
  end if;

  insert into id_ledger (child_api_key_id, pool_id, child_source, pool_source)
  values (p_key, v_pool, v_child_src, v_pool_src);

  -- The consumption that used the last ID suspends the child, exactly once per transition.
  if v_suspend then
    update api_keys set status = 'suspended', suspended_reason = 'quota_exhausted' where id = p_key;
    perform sl_emit(v_partner, p_key, 'child.suspended', sl_balance_data(p_key, 'quota_exhausted'));
    v_emitted := true;
  end if;

  return query select 'consumed', v_child_src, v_pool_src, v_reload, v_partner, v_emitted;
end
$$;

/*
 * partner-update-child. Null parameters mean "not given". Webhook: p_webhook_action keep | set | clear;
 * p_secret_action none | replace | keep_or_mint with p_secret_sealed as the candidate secret.
 */
create function sl_update_child(
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

-- The child.created / child.adopted data shape.
create function sl_child_snapshot(p_child uuid) returns jsonb
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

/*
 * partner-adopt-existing-key: a direct key of the caller's own account becomes a managed child under
 * a new phantom user, with its own subscription. p_set_webhook overwrites the key's webhook.
 */
create function sl_adopt_key(
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

/*
 * partner-rotate-child-key: replaces the key hash; the record id and every reference stay. At most
 * p_limit rotations per child per rolling 24 hours (counted under the key's row lock).
 */
create function sl_rotate_child_key(p_master uuid, p_child uuid, p_hash text, p_prefix text, p_limit integer)
returns table (old_key_prefix text, rotated_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
declare
  k api_keys;
  v_recent integer;
  v_at timestamptz := now();
begin
  select * into k from api_keys where api_keys.id = p_child for update;
  if k.id is null then
    raise exception 'no child with api key id %', p_child using errcode = 'SL404';
  end if;
  if k.parent_api_key_id is null then
    raise exception 'key % is not a managed child', p_child using errcode = 'SL404';
  end if;
  if k.parent_api_key_id <> p_master then
    raise exception 'child % belongs to another partner', p_child using errcode = 'SL403';
  end if;
  select count(*)::int into v_recent from key_rotations r
  where r.api_key_id = p_child and r.rotated_at > v_at - interval '24 hours';
  if v_recent >= p_limit then
    raise exception 'child % was rotated % times in the last 24 hours; the limit is %', p_child, v_recent, p_limit
      using errcode = 'SL429', detail = jsonb_build_object('recent_rotations_24h', v_recent)::text;
  end if;
  update api_keys set key_hash = p_hash, key_prefix = p_prefix, rotated_at = v_at where api_keys.id = p_child;
  insert into key_rotations (api_key_id, old_key_prefix, rotated_at) values (p_child, k.key_prefix, v_at);
  return query select k.key_prefix, v_at;
end
$$;

/*
 * partner-transfer-topup: moves top-up IDs from the partner pool to a child, both or neither.
 */
create function sl_transfer_topup(p_master uuid, p_child uuid, p_amount integer)
returns table (partner_topup_balance integer, child_topup_balance integer)
language plpgsql as $$
#variable_conflict use_column
declare
  s child_subscriptions;
  v_partner uuid := sl_partner_of(p_master);
  p pools;
begin
  if p_amount is null or p_amount <= 0 then
    raise exception 'amount must be a positive integer' using errcode = 'SL400';
  end if;
  s := sl_lock_child(p_master, p_child);
  select * into p from pools where account_id = v_partner for update;
  if p.id is null then
    raise exception 'the partner has no pool subscription' using errcode = 'SL404';
  end if;
  if p.topup_balance < p_amount then
    raise exception 'the partner top-up balance (%) is lower than the amount (%)', p.topup_balance, p_amount
      using errcode = 'SL402',
            detail = jsonb_build_object('partner_topup_balance', p.topup_balance, 'requested_amount', p_amount)::text;
  end if;
  update pools set topup_balance = topup_balance - p_amount where id = p.id;
  update child_subscriptions set topup_balance = topup_balance + p_amount where id = s.id;
  perform sl_emit(v_partner, p_child, 'child.topup_changed', jsonb_build_object(
    'child_api_key_id', p_child,
    'previous_topup_balance', s.topup_balance,
    'topup_balance', s.topup_balance + p_amount,
    'delta', p_amount,
    'reason', 'gift'));
  perform sl_reactivate_if_able(v_partner, p_child, 'topup_purchased');
  return query select p.topup_balance - p_amount, s.topup_balance + p_amount;
end
$$;

/*
 * partner-release-child: the key returns to the partner's direct account, its subscription and
 * phantom user are deleted and its remaining top-up goes to the pool (lost when there is no pool).
 */
create function sl_release_child(p_master uuid, p_child uuid)
returns table (topup_returned integer)
language plpgsql as $$
#variable_conflict use_column
declare
  s child_subscriptions;
  v_partner uuid := sl_partner_of(p_master);
  v_phantom uuid;
begin
  s := sl_lock_child(p_master, p_child);
  select account_id into v_phantom from api_keys where id = p_child for update;
  update pools set topup_balance = topup_balance + s.topup_balance where account_id = v_partner;
  update api_keys set
    account_id = v_partner,
    parent_api_key_id = null,
    -- It keeps tracking as a direct tracker of the partner, unless it was revoked.
    status = case when status = 'revoked' then 'revoked' else 'active' end,
    suspended_reason = null
  where id = p_child;
  delete from child_subscriptions where id = s.id;
  delete from accounts a where a.id = v_phantom and a.is_phantom
    and not exists (select 1 from api_keys where account_id = v_phantom);
  perform sl_emit(v_partner, p_child, 'child.released', jsonb_build_object(
    'child_api_key_id', p_child,
    'topup_returned', s.topup_balance));
  return query select s.topup_balance;
end
$$;

/*
 * Credits a completed top-up exactly once per payment reference (a replayed confirmation is a no-op).
 * For a child: child.topup_changed (purchase) and, when it lifts a suspension, child.reactivated.
 * For a pool: clears the in-flight reload and the decline streak.
 */
create function sl_credit_topup(p_payment_ref text, p_pool uuid, p_child uuid, p_amount integer, p_source text)
returns boolean
language plpgsql as $$
declare
  v_topup uuid;
  s child_subscriptions;
  v_partner uuid;
begin
  if p_amount is null or p_amount <= 0 then
    raise exception 'a top-up must be a positive number of IDs' using errcode = 'SL400';
  end if;
  if p_child is not null then
    select * into s from child_subscriptions where api_key_id = p_child for update;
    if s.id is null then
      raise exception 'child % has no subscription', p_child using errcode = 'SL404';
    end if;
  end if;
  insert into topups (pool_id, child_api_key_id, amount_ids, status, source, payment_intent_id)
  values (p_pool, p_child, p_amount, 'completed', p_source, p_payment_ref)
  on conflict (payment_intent_id) do nothing
  returning id into v_topup;
  if v_topup is null then
    return false;
  end if;
  if p_child is not null then
    v_partner := sl_partner_of((select parent_api_key_id from api_keys where id = p_child));
    update child_subscriptions set topup_balance = topup_balance + p_amount where id = s.id;
    perform sl_emit(v_partner, p_child, 'child.topup_changed', jsonb_build_object(
      'child_api_key_id', p_child,
      'previous_topup_balance', s.topup_balance,
      'topup_balance', s.topup_balance + p_amount,
      'delta', p_amount,
      'reason', 'purchase'));
    perform sl_reactivate_if_able(v_partner, p_child, 'topup_purchased');
  else
    update pools set topup_balance = topup_balance + p_amount,
                     reload_started_at = case when p_source = 'auto_reload' then null else reload_started_at end,
                     consecutive_declines = case when p_source = 'auto_reload' then 0 else consecutive_declines end
    where id = p_pool;
    if not found then
      raise exception 'no pool %', p_pool using errcode = 'SL404';
    end if;
  end if;
  return true;
end
$$;

-- A declined auto-reload charge: the streak grows, the in-flight mark is released.
create function sl_record_reload_decline(p_pool uuid, p_payment_ref text, p_amount integer)
returns void
language plpgsql as $$
begin
  update pools set last_declined_at = now(), consecutive_declines = consecutive_declines + 1, reload_started_at = null
  where id = p_pool;
  insert into topups (pool_id, amount_ids, status, source, payment_intent_id)
  values (p_pool, p_amount, 'failed', 'auto_reload', p_payment_ref)
  on conflict (payment_intent_id) do nothing;
end
$$;

/*
 * partner-set-webhook. p_url_action keep | set | clear; p_secret_action replace | keep_or_mint.
 * Returns whether the candidate secret was stored.
 */
create function sl_set_partner_webhook(p_account uuid, p_url_action text, p_url text, p_secret_action text, p_secret_sealed text)
returns table (webhook_url text, secret_replaced boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  a accounts;
  v_url text;
  v_secret text;
  v_replaced boolean := false;
begin
  select * into a from accounts where id = p_account for update;
  v_url := a.partner_webhook_url;
  v_secret := a.partner_webhook_secret_sealed;
  if p_url_action = 'clear' then
    v_url := null;
    v_secret := null;
  else
    if p_url_action = 'set' then
      v_url := p_url;
    end if;
    if v_url is null then
      raise exception 'url is required: no partner webhook is configured yet' using errcode = 'SL400';
    end if;
    if p_secret_action = 'replace' or v_secret is null then
      v_secret := p_secret_sealed;
      v_replaced := true;
    end if;
  end if;
  update accounts set partner_webhook_url = v_url, partner_webhook_secret_sealed = v_secret where id = p_account;
  return query select v_url, v_replaced;
end
$$;

-- Rolls one due child whose subscription row the caller has locked; false when it is no longer due.
create function sl_roll_child(p_sub uuid, p_now timestamptz) returns boolean
language plpgsql as $$
declare
  r record;
  v_new_end timestamptz;
  v_partner uuid;
  v_quota integer;
begin
  select s.id, s.api_key_id, s.current_period_end, s.monthly_id_quota, s.pending_monthly_id_quota, s.topup_balance,
         s.status as sub_status, k.parent_api_key_id, k.name, k.status
  into r
  from child_subscriptions s join api_keys k on k.id = s.api_key_id
  where s.id = p_sub and s.current_period_end <= p_now and k.parent_api_key_id is not null;
  if r.id is null then
    return false;
  end if;
  v_new_end := greatest(r.current_period_end, p_now) + interval '30 days';
  v_quota := coalesce(r.pending_monthly_id_quota, r.monthly_id_quota);
  update child_subscriptions set
    ids_used_this_period = 0,
    monthly_id_quota = v_quota,
    pending_monthly_id_quota = null,
    current_period_start = greatest(r.current_period_end, p_now),
    current_period_end = v_new_end
  where id = r.id;
  v_partner := sl_partner_of(r.parent_api_key_id);
  perform sl_emit(v_partner, r.api_key_id, 'child.period_rolled', jsonb_build_object(
    'child_api_key_id', r.api_key_id,
    'previous_period_end', sl_iso(r.current_period_end),
    'new_period_end', sl_iso(v_new_end),
    'monthly_id_quota', v_quota,
    'ids_used_this_period', 0,
    'topup_balance', r.topup_balance));
  if v_quota <> r.monthly_id_quota then
    -- A queued decrease appears in child.updated's delta when it applies.
    perform sl_emit(v_partner, r.api_key_id, 'child.updated', jsonb_build_object(
      'child_api_key_id', r.api_key_id,
      'delta', jsonb_build_object('monthly_id_quota', v_quota),
      'name', r.name,
      'status', r.status,
      'monthly_id_quota', v_quota,
      'ids_used_this_period', 0,
      'topup_balance', r.topup_balance,
      'current_period_end', sl_iso(v_new_end),
      'sub_status', r.sub_status));
  end if;
  perform sl_reactivate_if_able(v_partner, r.api_key_id, 'period_rolled');
  return true;
end
$$;

/*
 * The hourly rollover of managed children whose period has ended: usage → 0, a queued decrease
 * applies, new end = max(previous end, now) + 30 days. Bounded batches. With p_skip_locked (the
 * normal passes) rows locked by another sweep or a busy consumer are skipped, so replicas share the
 * work; the final pass (p_skip_locked = false) waits for the busy ones instead of leaving them for
 * an hour. Postgres re-checks the due condition on a row another sweep has just rolled, so waiting
 * never rolls a child twice, and a second run finds nothing due.
 */
create function sl_roll_over_children(p_now timestamptz, p_limit integer, p_skip_locked boolean default true)
returns integer
language plpgsql as $$
declare
  r record;
  v_count integer := 0;
begin
  if p_skip_locked then
    for r in
      select s.id from child_subscriptions s join api_keys k on k.id = s.api_key_id
      where s.current_period_end <= p_now and k.parent_api_key_id is not null
      order by s.current_period_end, s.id limit p_limit
      for update of s skip locked
    loop
      if sl_roll_child(r.id, p_now) then v_count := v_count + 1; end if;
    end loop;
  else
    for r in
      select s.id from child_subscriptions s join api_keys k on k.id = s.api_key_id
      where s.current_period_end <= p_now and k.parent_api_key_id is not null
      order by s.current_period_end, s.id limit p_limit
      for update of s
    loop
      if sl_roll_child(r.id, p_now) then v_count := v_count + 1; end if;
    end loop;
  end if;
  return v_count;
end
$$;

/*
 * The same rollover for partner pools. On monthly-invoice billing the closing period's usage becomes
 * an invoice: overage IDs at partner_per_id_pence (nothing owed → recorded as paid).
 */
create function sl_roll_over_pools(p_now timestamptz, p_limit integer)
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
