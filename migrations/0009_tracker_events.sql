-- Tracker events: what the tracker script sends from visitors' browsers (page views, and engaged
-- time as deltas), appended by the collect endpoint. Collect only appends; identifying the visitor
-- and using an ID happen later, off the request path, so a slow provider never slows collect and a
-- crash loses nothing that was acknowledged.
--
-- The visitor's address is the one the server saw (the socket, or a trusted proxy's word), never a
-- value from the request body.

create table tracker_events (
  id              bigint generated always as identity primary key,
  website_id      uuid not null references websites (id) on delete cascade,
  -- The key that owns the tracker when the event arrived (whose IDs an identification would use).
  api_key_id      uuid not null references api_keys (id) on delete cascade,
  received_at     timestamptz not null default now(),
  kind            text not null check (kind in ('pageview', 'engagement')),
  ip              inet not null,
  is_bot          boolean not null,
  session_id      text not null check (length(session_id) between 1 and 64),
  url             text not null check (length(url) between 1 and 2048),
  referrer        text check (length(referrer) <= 2048),
  -- Engaged time since the previous beacon of the page, in milliseconds; each beacon applies once.
  active_ms       integer check (active_ms between 0 and 1800000),
  beacon_id       text check (length(beacon_id) between 1 and 64),
  user_agent      text check (length(user_agent) <= 512),
  -- pending: waits for the identification worker; skipped: never identified (a bot); done.
  identify_status text not null default 'pending' check (identify_status in ('pending', 'done', 'skipped')),
  check ((kind = 'engagement') = (active_ms is not null and beacon_id is not null)),
  check (not is_bot or identify_status = 'skipped')
);

-- The worker's queue: what is still to identify, oldest first.
create index tracker_events_pending on tracker_events (id) where identify_status = 'pending';
-- A beacon retried by the browser (keepalive fetch, then sendBeacon) is stored once.
create unique index tracker_events_beacon on tracker_events (website_id, session_id, beacon_id) where beacon_id is not null;
create index tracker_events_by_website on tracker_events (website_id, received_at);
