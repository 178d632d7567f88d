/*
 * Retention of raw tracker events: drops every weekly partition of tracker_events (0035) whose last
 * day is before p_before, and deletes the default partition's rows older than it (it holds rows only
 * when the partitions were not made ahead). Dropping a partition takes an exclusive lock on
 * tracker_events for a moment; lock_timeout keeps collect from queueing behind a drop that waits for
 * a long reader: the drop gives up, the weeks left wait for the next sweep, and the rest of the sweep
 * runs. Returns what it removed.
 */
create or replace function sl_drop_tracker_event_partitions(p_before date)
returns table (partitions integer, default_rows integer)
language plpgsql as $$
declare
  r record;
  v_lock_timeout text := current_setting('lock_timeout');
begin
  partitions := 0;
  perform set_config('lock_timeout', '5s', true);
  for r in
    select c.relname, to_date(substr(c.relname, 17), 'YYYYMMDD') as week
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'tracker_events'::regclass and c.relname ~ '^tracker_events_w[0-9]{8}$'
    order by 2
  loop
    exit when r.week + 7 > p_before;
    begin
      execute format('drop table %I', r.relname);
      partitions := partitions + 1;
    exception when lock_not_available then
      -- A long reader holds tracker_events: this week waits for the next sweep; the rest still runs.
      exit;
    end;
  end loop;
  perform set_config('lock_timeout', v_lock_timeout, true);
  delete from tracker_events_default where received_on < p_before;
  get diagnostics default_rows = row_count;
  return next;
end
$$;
