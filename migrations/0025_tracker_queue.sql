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
