-- The tracker worker in fewer writes (issue 14, collect).
--
-- Aggregation claimed its events with a lease (one update of every event row), folded them, then
-- marked each folded event in the loop and marked them all identified-queued in a second pass:
-- every event row was written three times after its insert, the last two changing a partial
-- index's predicate (so the table's other indexes were written again), and it was folded into its
-- visitor by three to four statements of its own. Claim and fold are now one transaction: the
-- events are locked with SKIP LOCKED instead of leased (a worker that dies takes its locks with
-- it, so its events are free at once rather than after a lease), folded per visitor by one
-- statement, and marked once, by one statement for the claim.
--
-- Identification settled each visitor in its own transaction, and the worker settles eight at
-- once: every settle of one busy tracker key waited for the key's subscription row (locked by
-- sl_consume_id until the commit) and woke on each commit. sl_settle_identifications settles the
-- results that are ready in one transaction, so the row is locked once for all of them.

/*
 * Folds the events into their visitors in one statement, per visitor rather than per event: its
 * new sessions (each counted once, on the visit it opens), page views, engaged time, first and
 * last seen, first outside referrer (in event order) and intent, applied by one insert-or-update.
 * Visitors are written in key order, so two workers whose claims share visitors lock them in the
 * same order. The events are locked here and marked by the caller (sl_apply_tracker_events).
 * Returns how many events it folded.
 */
create or replace function sl_fold_tracker_events(p_ids bigint[]) returns integer
language plpgsql as $$
declare
  v_applied integer;
begin
  with e as materialized (
    select t.id, t.website_id, t.ip, t.api_key_id, t.received_at, t.kind, t.active_ms, t.session_id,
           sl_external_referrer(t.referrer, w.domain) as referrer,
           t.kind = 'pageview' and sl_is_intent_page(t.url) as intent
    from tracker_events t join websites w on w.id = t.website_id
    where t.id = any(p_ids) and t.aggregated_at is null and not t.is_bot
    for update of t
  ),
  -- A session's first page view opens a visit; sessions already stored are not counted again.
  opened as (
    insert into visitor_sessions (website_id, ip, session_id)
    select distinct e.website_id, e.ip, e.session_id from e where e.kind = 'pageview'
    order by 1, 2, 3
    on conflict do nothing
    returning website_id, ip
  ),
  visits as (
    select o.website_id, o.ip, count(*)::int as n from opened o group by o.website_id, o.ip
  ),
  folded as (
    insert into visitors as v (website_id, ip, api_key_id, first_seen, last_seen, visit_count, pages_viewed, active_ms, referrer, intent_page)
    select g.website_id, g.ip, g.api_key_id, g.first_seen, g.last_seen, coalesce(s.n, 0), g.pages, g.active_ms, g.referrer, g.intent
    from (
      select e.website_id, e.ip, (array_agg(e.api_key_id order by e.id))[1] as api_key_id,
             min(e.received_at) as first_seen, max(e.received_at) as last_seen,
             count(*) filter (where e.kind = 'pageview')::int as pages, coalesce(sum(e.active_ms), 0) as active_ms,
             (array_agg(e.referrer order by e.id) filter (where e.referrer is not null))[1] as referrer,
             bool_or(e.intent) as intent
      from e group by e.website_id, e.ip
    ) g
    left join visits s on s.website_id = g.website_id and s.ip = g.ip
    order by g.website_id, g.ip
    on conflict (website_id, ip) do update set
      first_seen = least(v.first_seen, excluded.first_seen),
      last_seen = greatest(v.last_seen, excluded.last_seen),
      visit_count = v.visit_count + excluded.visit_count,
      pages_viewed = v.pages_viewed + excluded.pages_viewed,
      active_ms = v.active_ms + excluded.active_ms,
      referrer = coalesce(v.referrer, excluded.referrer),
      intent_page = v.intent_page or excluded.intent_page
  )
  -- The inserts above run to completion whatever this reads (data-modifying WITH).
  select count(*)::int into v_applied from e;
  return v_applied;
end
$$;

/*
 * Folds the events into their visitors, queues one pending identification per address, website and
 * period whose tracker key is active, and marks the events aggregated (and their identification
 * queued) in one statement.
 */
create or replace function sl_apply_tracker_events(p_ids bigint[]) returns integer
language plpgsql as $$
declare
  v_applied integer;
begin
  v_applied := sl_fold_tracker_events(p_ids);
  insert into identifications (website_id, ip, api_key_id, period_start)
  select q.website_id, q.ip, q.api_key_id, sl_identification_period(q.api_key_id)
  from (
    select distinct on (t.website_id, t.ip) t.website_id, t.ip, t.api_key_id
    from tracker_events t join api_keys k on k.id = t.api_key_id
    where t.id = any(p_ids) and t.aggregated_at is null and not t.is_bot and t.identify_status = 'pending' and k.status = 'active'
    order by t.website_id, t.ip, t.id desc
  ) q
  order by q.website_id, q.ip
  on conflict (website_id, ip, period_start) do nothing;
  update tracker_events
  set aggregated_at = clock_timestamp(), identify_status = case when identify_status = 'pending' then 'done' else identify_status end
  where id = any(p_ids) and aggregated_at is null and not is_bot;
  return v_applied;
end
$$;

/*
 * One claim of the aggregation queue, in one transaction: up to p_limit events waiting to be
 * aggregated, oldest first, locked with SKIP LOCKED (another worker takes the next ones), folded
 * into their visitors and marked. Returns how many it applied; 0 when nothing waits.
 */
create function sl_aggregate_tracker_events(p_limit integer) returns integer
language plpgsql as $$
declare
  v_ids bigint[];
begin
  select array_agg(q.id order by q.id) into v_ids
  from (
    select t.id from tracker_events t
    where t.aggregated_at is null and not t.is_bot
    order by t.id
    limit p_limit
    for update skip locked
  ) q;
  if v_ids is null then
    return 0;
  end if;
  return sl_apply_tracker_events(v_ids);
end
$$;

drop function sl_claim_tracker_events(integer, integer);
alter table tracker_events drop column lease_until;

/*
 * Settles several claimed identifications in one transaction, each exactly as
 * sl_settle_identification settles one, in the order given. The worker sends one tracker key's at a
 * time (tracker/settle-identifications.ts says why: two keys of one partner in one transaction can
 * deadlock on the partner's pool). p_items: a JSON array of
 * {id, result, cache}, `result` and `cache` as sl_settle_identification takes them (cache null
 * when the lookup was not fresh). One row per item, in the same order.
 */
create function sl_settle_identifications(p_items jsonb, p_ttl interval)
returns table (id uuid, outcome text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language plpgsql as $$
declare
  v_item jsonb;
begin
  for v_item in select value from jsonb_array_elements(p_items) loop
    return query
      select (v_item->>'id')::uuid, s.outcome, s.reload_pool_id, s.partner_account_id, s.emitted
      from sl_settle_identification((v_item->>'id')::uuid, v_item->'result', nullif(v_item->'cache', 'null'::jsonb), p_ttl) s;
  end loop;
end
$$;
