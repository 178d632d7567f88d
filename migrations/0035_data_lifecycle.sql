-- requires: functions/lifecycle/sl_ensure_tracker_event_partitions.sql
-- Data lifecycle (issue 30 §3): raw tracker events in weekly partitions, so retention drops whole
-- partitions instead of deleting rows, and the indexes the retention and ageing sweeps read.
--
-- tracker_events is append-only (collect writes a row once; nothing updates it since 0025), so it is
-- range-partitioned on the UTC day it arrived (received_on), one partition per ISO week (Monday to
-- Monday), plus a default partition that holds whatever arrives outside the partitions made ahead
-- (sl_ensure_tracker_event_partitions moves such rows into their week when it makes it). Dropping a
-- week past the retention costs the same at a thousand rows or a billion.
--
-- A unique index of a partitioned table must hold the partition key, so the beacon index becomes
-- (website_id, session_id, beacon_id, received_on): a repeated engagement beacon is stored once within
-- its UTC day by the index, and across midnight by sl_collect_events, which also looks for it in the
-- day before (a browser repeats a beacon within seconds: keepalive fetch, then sendBeacon).
-- The primary key becomes (id, received_on); ids still come from one sequence and stay unique.
--
-- Rows are copied into the new table in this migration: on a large table it runs as long as the copy.

drop view if exists tracker_filtered_beacons;

alter table tracker_events rename to tracker_events_before_partitions;
alter index tracker_events_pkey rename to tracker_events_before_partitions_pkey;
alter index tracker_events_beacon rename to tracker_events_before_partitions_beacon;
alter index tracker_events_by_website rename to tracker_events_before_partitions_by_website;

create sequence tracker_event_ids as bigint;

create table tracker_events (
  id              bigint not null default nextval('tracker_event_ids'),
  website_id      uuid not null references websites (id) on delete cascade,
  -- The key that owns the tracker when the event arrived (whose IDs an identification would use).
  api_key_id      uuid not null references api_keys (id) on delete cascade,
  received_at     timestamptz not null default now(),
  -- The UTC day of received_at: the partition key (a generated column cannot be one).
  received_on     date not null default (now() at time zone 'UTC')::date,
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
  primary key (id, received_on),
  constraint tracker_events_engagement_has_beacon check ((kind = 'engagement') = (active_ms is not null and beacon_id is not null)),
  constraint tracker_events_received_on_day check (received_on = (received_at at time zone 'UTC')::date)
) partition by range (received_on);
alter sequence tracker_event_ids owned by tracker_events.id;

create table tracker_events_default partition of tracker_events default;

-- A beacon retried by the browser is stored once (see above for midnight).
create unique index tracker_events_beacon on tracker_events (website_id, session_id, beacon_id, received_on) where beacon_id is not null;
create index tracker_events_by_website on tracker_events (website_id, received_at);

-- The weeks the existing rows span, and the weeks ahead, before the copy (so nothing lands in the default).
select sl_ensure_tracker_event_partitions(coalesce((select min(received_at) from tracker_events_before_partitions), now()), now(), 4);

insert into tracker_events (id, website_id, api_key_id, received_at, received_on, kind, ip, is_bot, session_id, url, referrer, active_ms, beacon_id, user_agent)
select id, website_id, api_key_id, received_at, (received_at at time zone 'UTC')::date, kind, ip, is_bot, session_id, url, referrer, active_ms, beacon_id, user_agent
from tracker_events_before_partitions;
select setval('tracker_event_ids', greatest((select max(id) from tracker_events_before_partitions), 1), (select max(id) from tracker_events_before_partitions) is not null);

drop table tracker_events_before_partitions;

-- Retention's reads: each by the time its rows end, so a sweep reads only what it removes.
-- Webhook events end when delivered, finally failed (their last attempt) or found without destination.
create index events_ended on events ((coalesce(delivered_at, last_attempt_at, created_at))) where delivery_status <> 'pending';
create index ip_cache_expiry on ip_cache (expires_at);
create index connect_links_ended on connect_links ((coalesce(used_at, expires_at)));

-- Ageing's reads (personal data over time): rows that still hold an address, by when they were last
-- seen. An aged row's address is replaced by one of 100::/64 (RFC 6666's discard-only prefix, which no
-- visitor can have), so it leaves these indexes and is never read again.
create index visitors_holding_address on visitors (last_seen) where not ip << '100::/64'::inet;
create index identifications_holding_address on identifications (created_at) where not ip << '100::/64'::inet;
create index api_lookups_holding_address on api_lookups (last_seen) where not ip << '100::/64'::inet;
create index credit_transactions_holding_address on credit_transactions (created_at) where ip is not null;
-- Erasure of one person (by profile URL): the identifications that name them.
create index identifications_by_person on identifications (person_linkedin_url) where person_linkedin_url is not null;

-- The numbers of the addresses ageing puts in place of a visitor's: '100::' + n, one per aged row,
-- so an aged row never collides with another under a unique key and names nobody.
create sequence anonymous_address_numbers as bigint;
