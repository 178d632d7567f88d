-- collect's defences (docs/decisions.md, "collect's defences").
--
-- 1. The page-host rule once (sl_tracker_accepts_host), so the body's url and the browser's Origin
--    (or Referer) are judged by the same rule: the website's domain and its subdomains, or the
--    account's allowed_domains when it set any.
-- 2. sl_collect_events takes each beacon's origin_host (null when the browser sent neither header)
--    and drops a beacon whose origin host the rule refuses, like a foreign page host.
-- 3. sl_tracker_visitor_status: before a beacon is appended, whether it would be stored and whether
--    its address is a new visitor of the website (no identification of its unit — the address, or
--    an IPv6 /64 — this period: it may use an ID), which is what collect's per-website budget counts.
-- 4. tracker_filtered_daily: beacons dropped by collect's budgets, per website, day (UTC) and
--    reason, written a moment later in batches (sl_record_tracker_filtered); the view
--    tracker_filtered_beacons puts bots' beacons (stored, is_bot) beside them.

/* Whether a tracker with domain p_domain, of an account with p_allowed (empty: none set), takes a page on p_host. */
create function sl_tracker_accepts_host(p_host text, p_domain text, p_allowed text[]) returns boolean
language sql immutable as $$
  select case when cardinality(p_allowed) = 0 then sl_host_in_domain(p_host, p_domain)
              else exists (select 1 from unnest(p_allowed) x where sl_host_in_domain(p_host, x)) end
$$;

/*
 * Appends a batch of beacons (a JSON array of objects: n, the beacon's place in the caller's batch,
 * then the event's fields) in one statement, and returns for each n whether its event was stored. A
 * beacon is dropped quietly for an unknown tracker, an inactive website, a revoked key, a page host
 * the website does not take (sl_tracker_accepts_host), or an origin host (the browser's Origin or
 * Referer, when it sent one) the same rule refuses. A repeated engagement beacon (same website,
 * session and beacon id) is stored once: against a stored one by the unique index, and within the
 * batch by taking the first. Rows go in in key order, so two batches that carry the same beacons
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
    select d.tracking_script_id, d.page_host, d.origin_key, w.id as website_id, w.api_key_id
    from (select distinct tracking_script_id, page_host, origin_key from e) d
    join websites w on w.tracking_script_id = d.tracking_script_id and w.status = 'active'
    join api_keys k on k.id = w.api_key_id and k.status <> 'revoked'
    join accounts a on a.id = k.account_id
    where sl_tracker_accepts_host(d.page_host, w.domain, a.allowed_domains)
      and (d.origin_key = '' or sl_tracker_accepts_host(d.origin_key, w.domain, a.allowed_domains))
  ),
  ins as (
    insert into tracker_events (website_id, api_key_id, kind, ip, is_bot, session_id, url, referrer, active_ms, beacon_id, user_agent)
    select s.website_id, s.api_key_id, e.kind, e.ip, e.is_bot, e.session_id, e.url, e.referrer, e.active_ms, e.beacon_id, e.user_agent
    from e join site s on s.tracking_script_id = e.tracking_script_id and s.page_host = e.page_host and s.origin_key = e.origin_key
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
  from e left join site s on s.tracking_script_id = e.tracking_script_id and s.page_host = e.page_host and s.origin_key = e.origin_key;
end
$$;

/*
 * For a batch of beacons about to be appended (a JSON array of objects: n, tracking_script_id,
 * page_host, origin_host, ip), per n: `accepted`, whether sl_collect_events would store it (the same
 * tracker, key and host checks), and `candidate`, whether its address is a new visitor the worker
 * would identify: an accepted beacon, of an active key (a suspended one's visitors are never
 * identified), from an address with no identification of the website in the key's current period.
 * Reads only; a beacon the worker has not folded yet leaves its address a candidate.
 */
create function sl_tracker_visitor_status(p_beacons jsonb) returns table (n integer, accepted boolean, candidate boolean)
language plpgsql stable as $$
#variable_conflict use_column
begin
  return query
  select b.n, s.website_id is not null,
         s.website_id is not null and s.key_status = 'active' and not exists (
           select 1 from identifications i
           where i.website_id = s.website_id and i.unit = sl_identification_unit(b.ip) and not i.keyed_by_address
             and i.period_start = sl_identification_period(s.api_key_id))
  from jsonb_to_recordset(p_beacons) as b(n integer, tracking_script_id uuid, page_host text, origin_host text, ip inet)
  left join lateral (
    select w.id as website_id, w.api_key_id, k.status as key_status
    from websites w
    join api_keys k on k.id = w.api_key_id and k.status <> 'revoked'
    join accounts a on a.id = k.account_id
    where w.tracking_script_id = b.tracking_script_id and w.status = 'active'
      and sl_tracker_accepts_host(b.page_host, w.domain, a.allowed_domains)
      and (b.origin_host is null or sl_tracker_accepts_host(b.origin_host, w.domain, a.allowed_domains))
  ) s on true;
end
$$;

-- Beacons collect dropped over a budget, per website, day (UTC) and reason: `address_budget` (the
-- client address's beacons a minute) or `website_budget` (the website's new visitors' beacons a
-- minute). Not a ledger: counted in memory and added a moment later (write-behind.ts).
create table tracker_filtered_daily (
  website_id  uuid not null references websites (id) on delete cascade,
  day         date not null,
  reason      text not null check (reason in ('address_budget', 'website_budget')),
  beacons     bigint not null check (beacons > 0),
  primary key (website_id, day, reason)
);

/*
 * Adds a batch of filtered counts from a process: [{tracking_script_id, reason, beacons}]. A
 * tracking id no website has (a made-up one: the per-address budget counts beacons before anything
 * is looked up) counts nowhere. Rows are applied in key order, so two replicas flushing at once
 * cannot deadlock.
 */
create function sl_record_tracker_filtered(p_rows jsonb) returns integer
language sql as $$
  with input as (
    select w.id as website_id, r.reason, sum(r.beacons)::bigint as beacons
    from jsonb_to_recordset(p_rows) as r(tracking_script_id uuid, reason text, beacons bigint)
    join websites w on w.tracking_script_id = r.tracking_script_id
    group by 1, 2
  ), applied as (
    insert into tracker_filtered_daily (website_id, day, reason, beacons)
    select i.website_id, (now() at time zone 'UTC')::date, i.reason, i.beacons
    from input i
    where i.beacons > 0
    order by i.website_id, i.reason
    on conflict (website_id, day, reason) do update set beacons = tracker_filtered_daily.beacons + excluded.beacons
    returning 1
  )
  select count(*)::int from applied
$$;

-- What collect kept from identification, per website, day (UTC) and reason: bots (stored, never
-- identified) beside the budgets' drops (never stored). For an operator's reading; nothing reads it
-- on a request path.
create view tracker_filtered_beacons as
select website_id, (received_at at time zone 'UTC')::date as day, 'bot'::text as reason, count(*)::bigint as beacons
from tracker_events where is_bot group by 1, 2
union all
select website_id, day, reason, beacons from tracker_filtered_daily;
