/*
 * Adds a batch of filtered counts from a process: [{tracking_script_id, reason, beacons}]. A
 * tracking id no website has (a made-up one: the per-address budget counts beacons before anything
 * is looked up) counts nowhere. Rows are applied in key order, so two replicas flushing at once
 * cannot deadlock.
 */
create or replace function sl_record_tracker_filtered(p_rows jsonb) returns integer
language sql as $$
  with input as (
    select w.id as website_id, r.reason, sum(r.beacons)::bigint as beacons
    from jsonb_to_recordset(p_rows) as r(tracking_script_id uuid, reason text, beacons bigint)
    join websites w on w.tracking_script_id = r.tracking_script_id
    group by 1, 2
  ), applied as (
    insert into tracker_filtered_daily (website_id, day, reason, beacons)
    select i.website_id, (now() at time zone 'UTC')::date, i.reason, i.beacons
    from input i
    where i.beacons > 0
    order by i.website_id, i.reason
    on conflict (website_id, day, reason) do update set beacons = tracker_filtered_daily.beacons + excluded.beacons
    returning 1
  )
  select count(*)::int from applied
$$;
