/*
 * The hourly rollover of managed children whose period has ended: usage → 0, a queued decrease
 * applies, new end = max(previous end, now) + 30 days. Bounded batches. With p_skip_locked (the
 * normal passes) rows locked by another sweep or a busy consumer are skipped, so replicas share the
 * work; the final pass (p_skip_locked = false) waits for the busy ones instead of leaving them for
 * an hour. Postgres re-checks the due condition on a row another sweep has just rolled, so waiting
 * never rolls a child twice, and a second run finds nothing due.
 */

/*
 * The hourly rollover of managed children whose period has ended: usage → 0, a queued decrease
 * applies, new period = [max(previous end, now), that + 30 days). Bounded batches, in period-end
 * order. With p_skip_locked (the normal passes) rows locked by another sweep or a busy consumer are
 * skipped, so replicas share the work; the final pass (p_skip_locked = false) waits for the busy ones
 * instead of leaving them for an hour. Postgres re-checks the due condition on a row another sweep
 * has just rolled, so waiting never rolls a child twice, and a second run finds nothing due.
 *
 * Events, in the order 0002 emitted them child by child: child.period_rolled; child.updated when a
 * queued decrease applies (it appears in the delta then); child.reactivated (reason period_rolled)
 * when the new period lifts a quota-exhausted suspension. They are written as sl_emit writes one
 * (same envelope, same destination rule through sl_event_has_destination, timestamps strictly
 * increasing within the transaction, carried on in sl.last_event_at), in one insert.
 */
create or replace function sl_roll_over_children(p_now timestamptz, p_limit integer, p_skip_locked boolean default true)
returns integer
language plpgsql
-- Neither statement's best plan depends on the values it is given (a walk from the start of the
-- index; a batch of at most p_limit rows looked up by key), so each is planned once per session: a
-- fresh plan per call cost more than the walk itself when nothing is due.
set plan_cache_mode = force_generic_plan
as $$
declare
  v_batch child_subscriptions[];
  v_last text := current_setting('sl.last_event_at', true);
  v_at timestamptz;
  v_rolled integer;
  v_events integer;
begin
  -- The batch, locked, as it stands once locked: a walk along child_subscriptions_period_end, each
  -- row checked against its key (managed children only) by primary key, stopping after p_limit.
  if p_skip_locked then
    select array_agg(due.s order by (due.s).current_period_end, (due.s).id) into v_batch from (
      select s from child_subscriptions s
      where s.current_period_end <= p_now
        and exists (select 1 from api_keys k where k.id = s.api_key_id and k.parent_api_key_id is not null)
      order by s.current_period_end limit p_limit
      for update of s skip locked
    ) due;
  else
    select array_agg(due.s order by (due.s).current_period_end, (due.s).id) into v_batch from (
      select s from child_subscriptions s
      where s.current_period_end <= p_now
        and exists (select 1 from api_keys k where k.id = s.api_key_id and k.parent_api_key_id is not null)
      order by s.current_period_end limit p_limit
      for update of s
    ) due;
  end if;
  if v_batch is null then
    return 0;
  end if;

  -- sl_emit's clock: the time of writing, to the millisecond, after the transaction's last event.
  v_at := date_trunc('milliseconds', clock_timestamp());
  if v_last is not null and v_last <> '' and v_at <= v_last::timestamptz then
    v_at := v_last::timestamptz + interval '1 millisecond';
  end if;

  -- The rows are this transaction's until it ends, so what the batch read of them still holds.
  with b as (
    select d.id, d.ordinality as ord, d.api_key_id, d.current_period_end as old_end, d.monthly_id_quota as old_quota,
           coalesce(d.pending_monthly_id_quota, d.monthly_id_quota) as quota, d.topup_balance, d.status as sub_status,
           k.name, k.status, k.suspended_reason, m.account_id as partner, greatest(d.current_period_end, p_now) as new_start
    from unnest(v_batch) with ordinality as d
    join api_keys k on k.id = d.api_key_id
    join api_keys m on m.id = k.parent_api_key_id
  ), rolled as (
    update child_subscriptions s set
      ids_used_this_period = 0,
      monthly_id_quota = b.quota,
      pending_monthly_id_quota = null,
      current_period_start = b.new_start,
      current_period_end = b.new_start + interval '30 days'
    from b
    where s.id = b.id
    returning b.*, s.current_period_end as new_end
  ), reactivated as (
    -- sl_reactivate_if_able's rule: only a quota-exhausted suspension lifts, when the child can consume
    -- again. Only a consumer suspends for quota, and it locks the child first, so the keys read above
    -- as not suspended for quota cannot have become so since; the update checks again all the same.
    update api_keys k set status = 'active', suspended_reason = null
    from rolled r
    where r.status = 'suspended' and r.suspended_reason = 'quota_exhausted'
      and k.id = r.api_key_id and k.status = 'suspended' and k.suspended_reason = 'quota_exhausted'
      and (0 < r.quota or r.topup_balance > 0)
    returning k.id
  ), emitted as (
    select r.ord, 1 as k, r.partner, r.api_key_id, 'child.period_rolled' as event, jsonb_build_object(
        'child_api_key_id', r.api_key_id,
        'previous_period_end', sl_iso(r.old_end),
        'new_period_end', sl_iso(r.new_end),
        'monthly_id_quota', r.quota,
        'ids_used_this_period', 0,
        'topup_balance', r.topup_balance) as data
    from rolled r
    union all
    -- A queued decrease is announced in child.updated's delta when it applies.
    select r.ord, 2, r.partner, r.api_key_id, 'child.updated', jsonb_build_object(
        'child_api_key_id', r.api_key_id,
        'delta', jsonb_build_object('monthly_id_quota', r.quota),
        'name', r.name,
        'status', r.status,
        'monthly_id_quota', r.quota,
        'ids_used_this_period', 0,
        'topup_balance', r.topup_balance,
        'current_period_end', sl_iso(r.new_end),
        'sub_status', r.sub_status)
    from rolled r
    where r.quota <> r.old_quota
    union all
    -- sl_balance_data of the rolled row.
    select r.ord, 3, r.partner, r.api_key_id, 'child.reactivated', jsonb_build_object(
        'child_api_key_id', r.api_key_id,
        'ids_used_this_period', 0,
        'monthly_id_quota', r.quota,
        'topup_balance', r.topup_balance,
        'reason', 'period_rolled')
    from rolled r join reactivated x on x.id = r.api_key_id
  ), destinations as (
    -- A partner event's destination is the partner's webhook: asked once per partner in the batch.
    select p.partner, sl_event_has_destination('partner', p.partner, null) as has
    from (select distinct partner from rolled) p
  ), written as (
    insert into events (partner_account_id, child_api_key_id, destination, event, body, delivery_status, next_attempt_at)
    select e.partner, e.api_key_id, 'partner', e.event,
           jsonb_build_object('event', e.event, 'timestamp', sl_iso(v_at + e.n * interval '1 millisecond'), 'data', e.data)::text,
           case when d.has then 'pending' else 'no_destination' end,
           now()
    from (select e.*, row_number() over (order by e.ord, e.k) - 1 as n from emitted e) e
    join destinations d on d.partner = e.partner
    order by e.n
    returning event
  )
  select count(*) filter (where event = 'child.period_rolled'), count(*) into v_rolled, v_events from written;

  if v_events > 0 then
    perform set_config('sl.last_event_at', (v_at + (v_events - 1) * interval '1 millisecond')::text, true);
  end if;
  return v_rolled;
end
$$;
