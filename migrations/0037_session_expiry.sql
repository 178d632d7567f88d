-- Sessions end (issue 30 §3: data that stops growing).
--
-- visitor_sessions keeps each session a visitor opened so that its later page views do not count
-- another visit (0010). Nothing removed them: a site whose audience returns every day gained a row
-- per visitor per day for as long as that audience lasted, the one table that grew under retention
-- (npm run bench -- storage). A session now records the UTC day it was opened, and the data-lifecycle
-- sweep deletes the sessions opened before the raw events' retention (tracker events are kept
-- TRACKER_EVENT_RETENTION_DAYS, 30 by default): a tab that sends a page view after that long opens a
-- new visit, as a 30-minute session timeout would have long before.
--
-- A stable default (now()): existing rows take the migration's day without a table rewrite, and
-- leave with the first sweep a retention period later.
alter table visitor_sessions add column opened_on date not null default (now() at time zone 'UTC')::date;
-- The sweep's read: the oldest sessions first, from the index alone.
create index visitor_sessions_opened on visitor_sessions (opened_on);
