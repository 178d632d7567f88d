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
