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
 * event fold once, so the event rows are read and not locked. An identified visitor whose new visit
 * comes after its account's quiet period (accounts.return_quiet_days) has returned:
 * sl_emit_visitor_returned, once per visit that brings it back. An identified visitor this fold
 * makes one of high intent is the `high_intent` signal for the account's integrations, and a watched
 * one opening a visit the `watched_visit` signal.
 */
create or replace function sl_fold_tracker_events(p_ids bigint[]) returns integer
language plpgsql as $$
declare
  v_applied integer;
  v_returned jsonb;
  v_intent jsonb;
  v_watched jsonb;
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
  g as (
    select e.website_id, e.ip, (array_agg(e.api_key_id order by e.id))[1] as api_key_id,
           min(e.received_at) as first_seen, max(e.received_at) as last_seen,
           count(*) filter (where e.kind = 'pageview')::int as pages, coalesce(sum(e.active_ms), 0) as active_ms,
           (array_agg(e.referrer order by e.id) filter (where e.referrer is not null))[1] as referrer,
           bool_or(e.intent) as intent
    from e group by e.website_id, e.ip
  ),
  -- An identified visitor opening a visit after its account's quiet period has returned: read as it
  -- was before this statement (every part of one statement sees the same snapshot).
  returned as (
    select v.website_id, v.ip, v.last_seen as previous
    from visits s
    join g on g.website_id = s.website_id and g.ip = s.ip
    join visitors v on v.website_id = s.website_id and v.ip = s.ip
    join api_keys k on k.id = v.api_key_id
    join accounts a on a.id = k.account_id
    where v.identification_id is not null and v.last_seen < g.first_seen - a.return_quiet_days * interval '1 day'
  ),
  -- Watched visitors (the console's watch) opening a visit.
  watched as (
    select v.website_id, v.ip from visits s join visitors v on v.website_id = s.website_id and v.ip = s.ip
    where v.is_watched and v.identification_id is not null
  ),
  -- Identified visitors not yet of high intent: those this fold makes so are a signal.
  below as (
    select v.website_id, v.ip from g join visitors v on v.website_id = g.website_id and v.ip = g.ip
    where v.identification_id is not null and not v.high_intent
  ),
  folded as (
    insert into visitors as v (website_id, ip, api_key_id, first_seen, last_seen, visit_count, pages_viewed, active_ms, referrer, intent_page)
    select g.website_id, g.ip, g.api_key_id, g.first_seen, g.last_seen, coalesce(s.n, 0), g.pages, g.active_ms, g.referrer, g.intent
    from g
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
  select (select count(*)::int from e),
         (select jsonb_agg(jsonb_build_object('website_id', r.website_id, 'ip', host(r.ip), 'previous', r.previous)) from returned r),
         (select jsonb_agg(jsonb_build_object('website_id', b.website_id, 'ip', host(b.ip))) from below b),
         (select jsonb_agg(jsonb_build_object('website_id', w.website_id, 'ip', host(w.ip))) from watched w)
  into v_applied, v_returned, v_intent, v_watched;
  -- After the fold, so what they carry is the visit that made them.
  if v_returned is not null then
    perform sl_emit_visitor_returned((r->>'website_id')::uuid, (r->>'ip')::inet, (r->>'previous')::timestamptz)
    from jsonb_array_elements(v_returned) r;
  end if;
  if v_intent is not null then
    perform sl_emit_signal(v.website_id, v.ip, 'high_intent')
    from jsonb_array_elements(v_intent) b
    join visitors v on v.website_id = (b->>'website_id')::uuid and v.ip = (b->>'ip')::inet
    where v.high_intent;
  end if;
  if v_watched is not null then
    perform sl_emit_signal((w->>'website_id')::uuid, (w->>'ip')::inet, 'watched_visit') from jsonb_array_elements(v_watched) w;
  end if;
  return v_applied;
end
$$;
