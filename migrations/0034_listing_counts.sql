-- list-visitors' exact total without counting the window (issue 30 §2).
--
-- The default view (no search, the last 30 days) counted its `total` on every call: at 1,000,000
-- visitors over 90 days an index-only count of 333,000 visitors and 33,000 lookups each probed for a
-- tracker row of its address, 290 ms alone and 460 ms at 8 connections (npm run bench -- visitors),
-- growing with the window. The total is now summed from counts kept per UTC hour as the rows change:
--   visitors  scope_id = website: its identified visitors, by the hour of last_seen;
--   lookups   scope_id = api key: its api_lookups rows, by the hour of last_seen;
--   overlap   scope_id = website: the pairs of an identified visitor and a lookup of the same address
--             by the website's own key, by the hour of the older last_seen of the two (the pair is in
--             a window exactly when both rows are, so the lookup is listed as the tracker row).
-- A total is then the whole hours after `since` summed (at most 24 a day of the window) plus the rows
-- of the one hour `since` falls in, counted by their indexes. Triggers on visitors and api_lookups
-- (functions/tracker/sl_count_listed_visitors.sql, sl_count_listed_lookups.sql) add a row per changed
-- (scope, kind, hour) in the writing transaction and fold the committed rows of the same hours into
-- one (sl_fold_listing_counts), so concurrent writers never wait on a shared counter row.

create table visitor_listing_counts (
  id       bigint generated always as identity primary key,
  scope_id uuid not null,
  kind     text not null check (kind in ('visitors', 'lookups', 'overlap')),
  hour     timestamptz not null check (hour = date_trunc('hour', hour, 'UTC')),
  n        integer not null
);
create index visitor_listing_counts_by_hour on visitor_listing_counts (scope_id, kind, hour) include (n);

-- The counts of the rows already there (the triggers count from here on: both are in the migration's
-- transaction, which the files' triggers join before it commits).
insert into visitor_listing_counts (scope_id, kind, hour, n)
select website_id, 'visitors', date_trunc('hour', last_seen, 'UTC'), count(*)
from visitors where identification_id is not null group by 1, 3;
insert into visitor_listing_counts (scope_id, kind, hour, n)
select api_key_id, 'lookups', date_trunc('hour', last_seen, 'UTC'), count(*)
from api_lookups group by 1, 3;
insert into visitor_listing_counts (scope_id, kind, hour, n)
select v.website_id, 'overlap', date_trunc('hour', least(v.last_seen, a.last_seen), 'UTC'), count(*)
from visitors v join websites w on w.id = v.website_id join api_lookups a on a.api_key_id = w.api_key_id and a.ip = v.ip
where v.identification_id is not null group by 1, 3;

-- The default view's page and the hour's partial count read the key's lookups with their address
-- (the tracker-row probe) from the index alone.
create index api_lookups_recent_with_address on api_lookups (api_key_id, last_seen desc) include (ip);
drop index api_lookups_recent;
alter index api_lookups_recent_with_address rename to api_lookups_recent;
-- A lookup's tracker row of its address, with what the probe tests, from the index alone.
create index visitors_identified_by_ip on visitors (ip) include (website_id, last_seen) where identification_id is not null;

-- identification-list's `qualified`: whether an active ICP qualifies an identification, probed
-- for each of the newest in an index of the qualifying scores alone (a fraction of the scores).
create index icp_scores_qualifying on icp_scores (identification_id) include (icp_id) where qualified;
-- identification-list's order (newest first, then by id) with what its filters read, so a page is
-- found in the index alone: the rows a filter or the offset skips are not fetched.
create index identifications_listed on identifications (website_id, created_at desc, id) include (status, identification_type);
drop index identifications_by_site;
