/*
 * One claim of the queue, in one transaction: up to p_limit events, oldest first, locked with SKIP
 * LOCKED (another worker takes the next ones), then applied. Returns how many it took off the
 * queue; 0 when nothing waits.
 */
-- A claim commits without waiting for its WAL flush (synchronous_commit off for its transaction).
-- Collect's appends answer only after their commit is flushed, and each flush waits for the one
-- before it: in a collect run the appends spent about three quarters of their time waiting for WAL,
-- behind the worker's commits among others. Aggregation can skip the wait safely: its transaction
-- only moves events from the queue into visitors and identifications, so if the server crashes
-- before the flush the whole transaction is gone, the events are on the queue again, and the next
-- claim applies them (nothing counted twice, nothing lost: the events were committed by collect).
-- A settle of an identification it queued commits synchronously after it, and flushing the WAL up
-- to the settle's commit record flushes this one's too.
create or replace function sl_aggregate_tracker_events(p_limit integer) returns integer
language plpgsql as $$
declare
  v_ids bigint[];
begin
  select array_agg(q.event_id order by q.event_id) into v_ids
  from (
    select event_id from tracker_queue order by event_id limit p_limit for update skip locked
  ) q;
  if v_ids is null then
    return 0;
  end if;
  -- For the caller's transaction: the worker calls this as a statement of its own.
  perform set_config('synchronous_commit', 'off', true);
  return sl_apply_tracker_events(v_ids);
end
$$;
