-- Aggregation, cheaper beside collect (issue 14).
--
-- 1. An identification's period is worked out once per tracker key in a claim, not once per visitor.
-- sl_identification_period reads the key's subscription (or its partner's pool) to find the
-- period an identification belongs to. The insert that queues identifications called it in its
-- select list, so once for every visitor of the claim, about 22 µs each, before the unique index
-- turned almost all of them away (a returning visitor is already queued for the period). Measured
-- in a collect run: 70,000 calls in 30 s, 1.5 s of the 10 s that aggregation spent in the
-- database. A claim holds the events of a few keys, so the keys are taken first and each is asked
-- once.
create or replace function sl_apply_tracker_events(p_ids bigint[]) returns integer
language plpgsql as $$
declare
  v_ids bigint[];
begin
  with taken as (
    delete from tracker_queue where event_id = any(p_ids) returning event_id
  )
  select array_agg(event_id order by event_id) into v_ids from taken;
  if v_ids is null then
    return 0;
  end if;
  perform sl_fold_tracker_events(v_ids);
  with q as (
    select distinct on (t.website_id, t.ip) t.website_id, t.ip, t.api_key_id
    from tracker_events t join api_keys k on k.id = t.api_key_id
    where t.id = any(v_ids) and not t.is_bot and k.status = 'active'
    order by t.website_id, t.ip, t.id desc
  ),
  -- Materialized: inlined, the subquery would be flattened into the join and the function called
  -- once per visitor again.
  periods as materialized (
    select k.api_key_id, sl_identification_period(k.api_key_id) as period_start
    from (select distinct api_key_id from q) k
  )
  insert into identifications (website_id, ip, api_key_id, period_start)
  select q.website_id, q.ip, q.api_key_id, p.period_start
  from q join periods p on p.api_key_id = q.api_key_id
  order by q.website_id, q.ip
  on conflict (website_id, ip, period_start) do nothing;
  return cardinality(v_ids);
end
$$;

-- 2. A claim commits without waiting for its WAL flush (synchronous_commit off for its transaction).
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
