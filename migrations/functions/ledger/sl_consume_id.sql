-- The consumption path, shortened where one child is hot (issue 14).
--
-- Every consumer of one child queues for that child's subscription row and holds it until its
-- transaction commits, so what a consumption does while it holds the row bounds the rate of the
-- whole child. sl_consume_id (0002) took the row with SELECT … FOR UPDATE (a lock record, then the
-- update: two writes of the row, each found again through the index), then read the key, locked and
-- updated the pool through a nested function, and inserted the ledger row, all under the lock.
--
-- Here a consumption first reads, without a lock, what the child and its pool have, and from that
-- decides where the ID will come from. It writes the ledger row for that decision, and only then
-- takes the child's row, with the UPDATE that spends the ID: its WHERE holds only if the decision
-- is still right, and Postgres re-checks it on the row as the previous holder left it, so a stale
-- read can never overdraw. The key's status is read after that (a suspension committed while we
-- waited is seen), then the pool is updated the same way. When any step finds the decision wrong
-- (a race with another consumer, a transfer, a rollover), the steps taken are undone and 0002's
-- path decides under the lock, exactly as before. Refusals (a suspended key, nothing left) need no
-- lock at all: the state that refuses is committed together with the status that explains it.
--
-- The lock order of 0002 is kept (child subscription, then key, then pool), so nothing new can
-- deadlock. Ledger ids now follow the order in which consumptions decided, not the order in which
-- they took the row; a child's quota rows still all come before its top-up rows (a top-up decision
-- is read only after the last quota ID was committed, and a corrected decision writes a new row).

/*
 * Consumes one ID for the tracker key p_key (one identification).
 * outcome: consumed | suspended | revoked | canceled | no_ids | pool_exhausted | not_metered | unknown_key
 * reload_pool_id: set when this call claimed an auto-reload for that pool (the caller charges it).
 *
 * A managed child's consumption is five statements: the read, the ledger row, the subscription
 * update (which takes the row), the key's status, the pool update; from its top-up, four.
 */
create or replace function sl_consume_id(p_key uuid)
returns table (outcome text, child_source text, pool_source text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  g record;
  f record;
  r record;
  k api_keys;
  d record;
  v_status text;
  v_partner uuid;
  v_pool uuid;
  v_child_src text;
  v_pool_src text;
  v_reload uuid;
  v_emitted boolean := false;
  v_suspend boolean := false;
  v_ledger bigint;
  v_wants_reload boolean;
begin
  -- What the child has, its key's status and its pool, as of now and without a lock.
  select * into g from sl_child_funding where api_key_id = p_key;

  if g.sub_id is not null then
    if g.key_status <> 'active' or g.sub_status = 'canceled' or (g.used >= g.quota and g.topup = 0) then
      outcome := case when g.key_status <> 'active' then g.key_status when g.sub_status = 'canceled' then 'canceled' else 'no_ids' end;
      child_source := null; pool_source := null; reload_pool_id := null; partner_account_id := g.partner; emitted := false;
      return next;
      return;
    end if;
    v_partner := g.partner;
    if g.used < g.quota then
      v_child_src := 'quota';
      v_pool := g.pool_id;
      v_pool_src := case when g.pool_used < g.pool_quota then 'quota'
                         when g.pool_topup > 0 then 'topup'
                         when g.pool_mode = 'invoice_monthly' then 'overage' end;
    else
      v_child_src := 'topup';
    end if;

    -- An empty prepaid pool (or none) goes to the general path, which may reload it or spend the
    -- child's own top-up instead.
    if v_child_src = 'topup' or v_pool_src is not null then
      insert into id_ledger (child_api_key_id, pool_id, child_source, pool_source)
      values (p_key, v_pool, v_child_src, v_pool_src)
      returning id into v_ledger;

      update child_subscriptions s
      set ids_used_this_period = s.ids_used_this_period + (v_child_src = 'quota')::int,
          topup_balance = s.topup_balance - (v_child_src = 'topup')::int
      where s.api_key_id = p_key and s.status = 'active'
        and case when v_child_src = 'quota' then s.ids_used_this_period < s.monthly_id_quota
                 else s.ids_used_this_period >= s.monthly_id_quota and s.topup_balance > 0 end
      returning s.id, s.ids_used_this_period as used, s.monthly_id_quota as quota, s.topup_balance as topup,
                s.last_consumption_event_at as last_event
      into f;

      if f.id is not null then
        -- Read after the lock, in its own statement: a suspension or revocation committed by the
        -- holder we waited for is seen (a row read before the wait, or joined in the update, is not).
        select status into v_status from api_keys where id = p_key;
        if v_status = 'active' and v_child_src = 'quota' then
          update pools
          set ids_used_this_period = ids_used_this_period + (v_pool_src <> 'topup')::int,
              topup_balance = topup_balance - (v_pool_src = 'topup')::int,
              overage_ids_this_period = overage_ids_this_period + (v_pool_src = 'overage')::int
          where id = v_pool
            and case v_pool_src
                  when 'quota' then ids_used_this_period < monthly_id_quota
                  when 'topup' then ids_used_this_period >= monthly_id_quota and topup_balance > 0
                  else pool_billing_mode = 'invoice_monthly' and ids_used_this_period >= monthly_id_quota and topup_balance = 0
                end
          returning auto_reload_enabled and auto_reload_threshold_ids is not null
                    and greatest(0, monthly_id_quota - ids_used_this_period) + topup_balance < auto_reload_threshold_ids
                    and (reload_started_at is null or reload_started_at < now() - interval '10 minutes')
          into v_wants_reload;
          if found then
            -- Read under the pool's lock: no claim is tried while a reload is in flight.
            if v_wants_reload and sl_claim_reload(v_pool) then
              v_reload := v_pool;
            end if;
            -- The consumption that used the last ID suspends the child, exactly once per transition.
            if f.used >= f.quota and f.topup = 0 then
              update api_keys set status = 'suspended', suspended_reason = 'quota_exhausted' where id = p_key;
              perform sl_emit(v_partner, p_key, 'child.suspended', sl_balance_data(p_key, 'quota_exhausted'));
              v_emitted := true;
            end if;
            outcome := 'consumed'; child_source := 'quota'; pool_source := v_pool_src;
            reload_pool_id := v_reload; partner_account_id := v_partner; emitted := v_emitted;
            return next;
            return;
          end if;
        elsif v_status = 'active' then
          -- The child's own top-up. Throttled to one event per child per 5 minutes, the delta
          -- covering only this consumption; the stamp returned is the one found under the lock.
          if f.last_event is null or f.last_event <= now() - interval '5 minutes' then
            update child_subscriptions set last_consumption_event_at = now() where id = f.id;
            perform sl_emit(v_partner, p_key, 'child.topup_changed', jsonb_build_object(
              'child_api_key_id', p_key,
              'previous_topup_balance', f.topup + 1,
              'topup_balance', f.topup,
              'delta', -1,
              'reason', 'consumption'));
            v_emitted := true;
          end if;
          if f.topup = 0 then
            update api_keys set status = 'suspended', suspended_reason = 'quota_exhausted' where id = p_key;
            perform sl_emit(v_partner, p_key, 'child.suspended', sl_balance_data(p_key, 'quota_exhausted'));
            v_emitted := true;
          end if;
          outcome := 'consumed'; child_source := 'topup'; pool_source := null;
          reload_pool_id := null; partner_account_id := v_partner; emitted := v_emitted;
          return next;
          return;
        end if;
        -- The key is no longer active, or the pool no longer has what was read: the ID goes back.
        update child_subscriptions
        set ids_used_this_period = ids_used_this_period - (v_child_src = 'quota')::int,
            topup_balance = topup_balance + (v_child_src = 'topup')::int
        where id = f.id;
      end if;
      delete from id_ledger where id = v_ledger;
    end if;
    v_pool := null;
    v_pool_src := null;
    v_child_src := null;
  end if;

  -- The general path (0002's): lock, read, decide.
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
