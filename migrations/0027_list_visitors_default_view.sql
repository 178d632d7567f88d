-- list-visitors without a search, read by its indexes (issue 14).
--
-- The request without `search` is the dashboard's default view and what an incremental sync sends.
-- Through the statement of migration 0013 it gathered the whole window before sorting it: at
-- 1,000,000 visitors over 90 days, the last 30 days are 333,000 rows, each carried with its columns
-- through a materialized CTE, hashed to find the addresses an api row repeats, sorted for a page of
-- 100, and counted: 350 to 400 ms for one request alone, over a second at 8 connections
-- (npm run bench -- visitors, "request without search").
--
-- Without a search the rows a page needs are the newest ones, and every part of the set has an
-- index in last_seen order: each tracker's identified visitors (visitors_identified) and the key's
-- lookups (api_lookups_recent). So the page is the newest limit + offset rows of each part, merged
-- and sorted: the rows read grow with the page, not with the window. The total is counted apart,
-- by an index-only count of the visitors and a count of the lookups whose address no listed visitor
-- has (one primary-key probe each), with no row carried or sorted. At 1M: about 20 ms for the
-- visitors and 90 ms for 33,000 lookups, the bulk of what is left.
--
-- The search keeps the statement of 0013 (its label and address branches already read only what
-- they match). Both now hand the page's keys, in order, to one statement that writes the rows as
-- JSON, so the row format is written once.

-- A listed row before its JSON: the keys that order the page and the visitor's own columns.
create type sl_listed_visitor as (
  website_id uuid,
  ip inet,
  last_seen timestamptz,
  source text,
  row_id uuid,
  first_seen timestamptz,
  visit_count integer,
  pages_viewed integer,
  active_ms bigint,
  high_intent boolean,
  identified_count integer,
  is_watched boolean,
  is_pinned boolean,
  crm_status text
);
