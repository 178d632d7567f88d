/*
 * Folds the events into their visitors in one statement, per visitor rather than per event: its
 * new sessions (each counted once, on the visit it opens), page views, engaged time, first and
 * last seen, first outside referrer (in event order) and intent, applied by one insert-or-update.
 * Visitors are written in key order, so two workers whose claims share visitors lock them in the
 * same order. The events are locked here and marked by the caller (sl_apply_tracker_events).
 * Returns how many events it folded.
 */

/*
 * Folds the events into their visitors in one statement, per visitor rather than per event, as 0024
 * did; the caller (sl_apply_tracker_events) has taken them off the queue, which is what makes an
 * event fold once, so the event rows are read and not locked.
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
    where t.id = any(p_ids) and not t.is_bot
  ),
  -- A session's first page view opens a visit; sessions already stored are not counted again.
  opened as (
    -- opened_on: the UTC day of its first page view here, which the lifecycle sweep ends it by (0037).
    insert into visitor_sessions (website_id, ip, session_id, opened_on)
    select e.website_id, e.ip, e.session_id, (min(e.received_at) at time zone 'UTC')::date
    from e where e.kind = 'pageview'
    group by 1, 2, 3
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
