/*
 * Appends a batch of beacons (a JSON array of objects: n, the beacon's place in the caller's batch,
 * then the event's fields) in one statement, and returns for each n whether its event was stored. A
 * beacon is dropped quietly for an unknown tracker, an inactive website, a revoked key, a page host
 * the website does not take, or an origin host (the browser's Origin or Referer, when it sent one)
 * the same rule refuses (sl_tracker_site). A repeated engagement beacon (same website,
 * session and beacon id) is stored once: against one stored today by the unique index (which holds
 * the partition key, the UTC day: 0035), against one stored yesterday by looking for it (a retry
 * that straddles midnight; two copies racing across midnight itself could both be stored), and within
 * the batch by taking the first. Rows go in in key order, so two batches that carry the same beacons
 * take the unique index's locks in the same order. Every stored event that is not a bot's enters
 * the worker's queue.
 */
create or replace function sl_collect_events(p_events jsonb) returns table (n integer, stored boolean)
-- plpgsql, so the statement is planned once per session and not on every call (a SQL function with
-- a data-modifying WITH is planned afresh each time; see 0012).
language plpgsql as $$
#variable_conflict use_column
begin
  return query
  with e as (
    select e.*, coalesce(e.origin_host, '') as origin_key,
           row_number() over (partition by e.tracking_script_id, e.session_id, e.beacon_id order by e.n) as nth
    from jsonb_to_recordset(p_events) as e(n integer, tracking_script_id uuid, kind text, page_host text, origin_host text, ip inet,
                                           is_bot boolean, session_id text, url text, referrer text, active_ms integer,
                                           beacon_id text, user_agent text)
  ),
  site as (
    select d.tracking_script_id, d.page_host, d.origin_key, t.website_id, t.api_key_id
    from (select distinct tracking_script_id, page_host, origin_key from e) d
    cross join lateral sl_tracker_site(d.tracking_script_id, d.page_host, d.origin_key) t
  ),
  ins as (
    insert into tracker_events (website_id, api_key_id, kind, ip, is_bot, session_id, url, referrer, active_ms, beacon_id, user_agent)
    select s.website_id, s.api_key_id, e.kind, e.ip, e.is_bot, e.session_id, e.url, e.referrer, e.active_ms, e.beacon_id, e.user_agent
    from e join site s on s.tracking_script_id = e.tracking_script_id and s.page_host = e.page_host and s.origin_key = e.origin_key
    where e.beacon_id is null or (e.nth = 1 and not exists (
      select 1 from tracker_events y
      where y.website_id = s.website_id and y.session_id = e.session_id and y.beacon_id = e.beacon_id
        and y.received_on = (now() at time zone 'UTC')::date - 1))
    order by s.website_id, e.session_id, e.beacon_id
    on conflict (website_id, session_id, beacon_id, received_on) where beacon_id is not null do nothing
    returning id, is_bot, website_id, session_id, beacon_id
  ),
  queued as (
    insert into tracker_queue (event_id) select i.id from ins i where not i.is_bot order by i.id
  )
  select e.n, s.website_id is not null and (e.beacon_id is null or (e.nth = 1 and exists (
           select 1 from ins i where i.website_id = s.website_id and i.session_id = e.session_id and i.beacon_id = e.beacon_id)))
  from e left join site s on s.tracking_script_id = e.tracking_script_id and s.page_host = e.page_host and s.origin_key = e.origin_key;
end
$$;
