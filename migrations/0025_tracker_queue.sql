-- The tracker's writes, narrowed (issue 14, collect).
--
-- 1. A queue apart from the events. An event waiting for the worker was marked in the event row
--    itself (aggregated_at, identify_status), so aggregation wrote a new version of every event row,
--    with new entries in the table's other indexes, since the mark changed two partial indexes'
--    predicates, and locked each row first: about 1.6 kB of WAL an event, and a table that
--    autovacuum had to clean behind every claim. The queue holds the ids of the events still to
--    fold (bots never enter it); a claim locks queue rows and deletes them, and an event row is
--    written once, by collect, and never again.
--    The queue has no foreign key: checking one would lock the event row it names. An id whose
--    event is gone (its website deleted) is taken off the queue like any other and folds nothing.
-- 2. A batch of beacons is appended by one set-based statement (sl_collect_events) instead of a
--    plpgsql call per beacon: each tracker and page host is checked once per batch, not once per
--    beacon, and the rows go in by one insert. Measured in the database: 58–62 µs of CPU a beacon
--    at 100 a batch, against 91–94 for the calls.
create table tracker_queue (
  event_id bigint primary key
);

insert into tracker_queue (event_id)
select id from tracker_events where aggregated_at is null and not is_bot;

drop index tracker_events_unaggregated;
-- The worker's queue before 0011 (identifications have their own table since).
drop index tracker_events_pending;
alter table tracker_events drop constraint tracker_events_check1;
alter table tracker_events drop column aggregated_at, drop column identify_status;

/*
 * Appends a batch of beacons (a JSON array of objects: n, the beacon's place in the caller's batch,
 * then the fields sl_collect_event took) in one statement, and returns for each n whether its event
 * was stored. A beacon is dropped quietly, as before, for an unknown tracker, an inactive website, a
 * revoked key, or a page host outside the website's domain (or the account's allowed_domains when
 * set). A repeated engagement beacon (same website, session and beacon id) is stored once: against
 * a stored one by the unique index, and within the batch by taking the first. Rows go in in key
 * order, so two batches that carry the same beacons take the unique index's locks in the same
 * order. Every stored event that is not a bot's enters the worker's queue.
 */
create function sl_collect_events(p_events jsonb) returns table (n integer, stored boolean)
-- plpgsql, so the statement is planned once per session and not on every call (a SQL function with
-- a data-modifying WITH is planned afresh each time; see 0012).
language plpgsql as $$
#variable_conflict use_column
begin
  return query
  with e as (
    select e.*, row_number() over (partition by e.tracking_script_id, e.session_id, e.beacon_id order by e.n) as nth
    from jsonb_to_recordset(p_events) as e(n integer, tracking_script_id uuid, kind text, page_host text, ip inet,
                                           is_bot boolean, session_id text, url text, referrer text, active_ms integer,
                                           beacon_id text, user_agent text)
  ),
  site as (
    select d.tracking_script_id, d.page_host, w.id as website_id, w.api_key_id
    from (select distinct tracking_script_id, page_host from e) d
    join websites w on w.tracking_script_id = d.tracking_script_id and w.status = 'active'
    join api_keys k on k.id = w.api_key_id and k.status <> 'revoked'
    join accounts a on a.id = k.account_id
    where case when cardinality(a.allowed_domains) = 0 then sl_host_in_domain(d.page_host, w.domain)
               else exists (select 1 from unnest(a.allowed_domains) x where sl_host_in_domain(d.page_host, x)) end
  ),
  ins as (
    insert into tracker_events (website_id, api_key_id, kind, ip, is_bot, session_id, url, referrer, active_ms, beacon_id, user_agent)
    select s.website_id, s.api_key_id, e.kind, e.ip, e.is_bot, e.session_id, e.url, e.referrer, e.active_ms, e.beacon_id, e.user_agent
    from e join site s on s.tracking_script_id = e.tracking_script_id and s.page_host = e.page_host
    where e.beacon_id is null or e.nth = 1
    order by s.website_id, e.session_id, e.beacon_id
    on conflict (website_id, session_id, beacon_id) where beacon_id is not null do nothing
    returning id, is_bot, website_id, session_id, beacon_id
  ),
  queued as (
    insert into tracker_queue (event_id) select i.id from ins i where not i.is_bot order by i.id
  )
  select e.n, s.website_id is not null and (e.beacon_id is null or (e.nth = 1 and exists (
           select 1 from ins i where i.website_id = s.website_id and i.session_id = e.session_id and i.beacon_id = e.beacon_id)))
  from e left join site s on s.tracking_script_id = e.tracking_script_id and s.page_host = e.page_host;
end
$$;

drop function sl_collect_event(uuid, text, text, inet, boolean, text, text, text, integer, text, text);

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
 * Takes the given events off the queue and applies those it took: folds them into their visitors
 * and queues one pending identification per address, website and period whose tracker key is
 * active. An id not on the queue (already applied) is skipped, so applying twice counts once.
 * Returns how many it took off the queue.
 */
create or replace function sl_apply_tracker_events(p_ids bigint[]) returns integer
language plpgsql as $$
declare
  v_ids bigint[];
begin
  with taken as (
    delete from tracker_queue where event_id = any(p_ids) returning event_id
  )
  select array_agg(event_id order by event_id) into v_ids from taken;
  if v_ids is null then
    return 0;
  end if;
  perform sl_fold_tracker_events(v_ids);
  insert into identifications (website_id, ip, api_key_id, period_start)
  select q.website_id, q.ip, q.api_key_id, sl_identification_period(q.api_key_id)
  from (
    select distinct on (t.website_id, t.ip) t.website_id, t.ip, t.api_key_id
    from tracker_events t join api_keys k on k.id = t.api_key_id
    where t.id = any(v_ids) and not t.is_bot and k.status = 'active'
    order by t.website_id, t.ip, t.id desc
  ) q
  order by q.website_id, q.ip
  on conflict (website_id, ip, period_start) do nothing;
  return cardinality(v_ids);
end
$$;

/*
 * One claim of the queue, in one transaction: up to p_limit events, oldest first, locked with SKIP
 * LOCKED (another worker takes the next ones), then applied. Returns how many it took off the
 * queue; 0 when nothing waits.
 */
create or replace function sl_aggregate_tracker_events(p_limit integer) returns integer
language plpgsql as $$
declare
  v_ids bigint[];
begin
  select array_agg(q.event_id order by q.event_id) into v_ids
  from (
    select event_id from tracker_queue order by event_id limit p_limit for update skip locked
  ) q;
  if v_ids is null then
    return 0;
  end if;
  return sl_apply_tracker_events(v_ids);
end
$$;
