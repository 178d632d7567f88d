-- Visitors: what the tracker saw of one address on one website, aggregated from tracker events by a
-- worker (claimed in bounded batches with SKIP LOCKED and a lease, so replicas share the work and a
-- crash leaves the batch to the next claim). Bots are never aggregated: they are nobody to sell to.
-- Aggregation has its own state (aggregated_at); identify_status stays the identification's.

alter table tracker_events
  add column aggregated_at timestamptz,
  add column lease_until timestamptz;
-- The aggregation queue: events not yet applied to their visitor, oldest first.
create index tracker_events_unaggregated on tracker_events (id) where aggregated_at is null and not is_bot;

create table visitors (
  website_id    uuid not null references websites (id) on delete cascade,
  ip            inet not null,
  -- The key that owned the tracker at the visitor's first event.
  api_key_id    uuid not null references api_keys (id) on delete cascade,
  first_seen    timestamptz not null,
  last_seen     timestamptz not null check (last_seen >= first_seen),
  -- Sessions (a tab's session id, renewed after 30 idle minutes by the tracker), page views, and
  -- engaged time (each beacon applied once).
  visit_count   integer not null default 0 check (visit_count >= 0),
  pages_viewed  integer not null default 0 check (pages_viewed >= 0),
  active_ms     bigint not null default 0 check (active_ms >= 0),
  -- The first referrer from outside the website.
  referrer      text check (length(referrer) <= 2048),
  -- Saw a page whose path says buying intent (pricing, plans, demo, contact sales).
  intent_page   boolean not null default false,
  -- docs/decisions.md: three pages, a minute of engaged time, or an intent page.
  high_intent   boolean generated always as (pages_viewed >= 3 or active_ms >= 60000 or intent_page) stored,
  primary key (website_id, ip)
);
create index visitors_recent on visitors (website_id, last_seen desc);

-- The sessions already counted, so a session's later page views do not count another visit.
create table visitor_sessions (
  website_id  uuid not null,
  ip          inet not null,
  session_id  text not null,
  primary key (website_id, ip, session_id),
  foreign key (website_id, ip) references visitors (website_id, ip) on delete cascade
);

/* Whether a page's path says buying intent. */
create function sl_is_intent_page(p_url text) returns boolean
language sql immutable as $$
  select coalesce(substring(p_url from '^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*(/[^?#]*)?'), '')
         ~* '/(pricing|plans|demo|book-a-demo|request-a-demo|contact-sales)(/|$)'
$$;

/* The referrer, unless it is the website itself (its domain or a subdomain) or not a URL. */
create function sl_external_referrer(p_referrer text, p_domain text) returns text
language sql immutable as $$
  select case when host is null or sl_host_in_domain(host, p_domain) then null else p_referrer end
  from (select lower(substring(p_referrer from '^[a-zA-Z][a-zA-Z0-9+.-]*://([^/?#:@]+)')) as host) referrer
$$;

/*
 * Claims up to p_limit events waiting to be aggregated, oldest first, leased for p_lease_ms by the
 * database's clock; an event whose lease ran out (its worker died) is claimable again.
 */
create function sl_claim_tracker_events(p_limit integer, p_lease_ms integer) returns table (id bigint)
language sql as $$
  update tracker_events e set lease_until = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0)
  where e.id in (
    select t.id from tracker_events t
    where t.aggregated_at is null and not t.is_bot and (t.lease_until is null or t.lease_until < clock_timestamp())
    order by t.id
    limit p_limit
    for update skip locked
  )
  returning e.id
$$;

/*
 * Aggregates claimed events into their visitors in one transaction, and marks each aggregated, so an
 * event counts once however often it is claimed. Events are applied visitor by visitor (in key
 * order, then event order), so two workers with backlogs sharing visitors lock those rows in the
 * same order and cannot deadlock. Returns how many it applied.
 */
create function sl_apply_tracker_events(p_ids bigint[]) returns integer
language plpgsql as $$
declare
  e record;
  v_new_session boolean;
  v_applied integer := 0;
begin
  for e in
    select t.*, w.domain from tracker_events t join websites w on w.id = t.website_id
    where t.id = any(p_ids) and t.aggregated_at is null and not t.is_bot
    order by t.website_id, t.ip, t.id
    for update of t
  loop
    insert into visitors (website_id, ip, api_key_id, first_seen, last_seen, pages_viewed, active_ms, referrer, intent_page)
    values (e.website_id, e.ip, e.api_key_id, e.received_at, e.received_at,
            case when e.kind = 'pageview' then 1 else 0 end, coalesce(e.active_ms, 0),
            sl_external_referrer(e.referrer, e.domain), e.kind = 'pageview' and sl_is_intent_page(e.url))
    on conflict (website_id, ip) do update set
      first_seen = least(visitors.first_seen, excluded.first_seen),
      last_seen = greatest(visitors.last_seen, excluded.last_seen),
      pages_viewed = visitors.pages_viewed + excluded.pages_viewed,
      active_ms = visitors.active_ms + excluded.active_ms,
      referrer = coalesce(visitors.referrer, excluded.referrer),
      intent_page = visitors.intent_page or excluded.intent_page;
    v_new_session := false;
    if e.kind = 'pageview' then
      insert into visitor_sessions (website_id, ip, session_id) values (e.website_id, e.ip, e.session_id)
      on conflict do nothing;
      v_new_session := found;
    end if;
    if v_new_session then
      update visitors set visit_count = visit_count + 1 where website_id = e.website_id and ip = e.ip;
    end if;
    update tracker_events set aggregated_at = clock_timestamp(), lease_until = null where id = e.id;
    v_applied := v_applied + 1;
  end loop;
  return v_applied;
end
$$;
