/*
 * Makes the weekly partitions of tracker_events (0035) from the week of p_from to p_weeks_ahead weeks
 * after the week of p_now, each named tracker_events_w<Monday, YYYYMMDD> and holding the UTC days
 * [Monday, next Monday). Rows the default partition holds for a week being made (they arrived while no
 * partition was ready: the sweep did not run for weeks) are moved into it first, since a partition
 * cannot be attached while the default holds rows of its range. Returns how many it made; a week
 * that exists is left alone, so concurrent and repeated calls are safe (a lock serialises makers).
 */
create or replace function sl_ensure_tracker_event_partitions(p_from timestamptz, p_now timestamptz, p_weeks_ahead integer)
returns integer
language plpgsql as $$
declare
  v_week date := date_trunc('week', p_from at time zone 'UTC')::date;
  v_last date := date_trunc('week', p_now at time zone 'UTC')::date + 7 * p_weeks_ahead;
  v_name text;
  v_made integer := 0;
  v_lock_timeout text := current_setting('lock_timeout');
begin
  -- One maker at a time: two would both see a week missing and the second create would fail.
  perform pg_advisory_xact_lock(hashtext('sl_ensure_tracker_event_partitions'));
  -- Making a partition locks tracker_events exclusively for a moment: never queue collect behind a
  -- long reader for it. Weeks not made now are made by the next sweep (4 are made ahead).
  perform set_config('lock_timeout', '5s', true);
  while v_week <= v_last loop
    v_name := 'tracker_events_w' || to_char(v_week, 'YYYYMMDD');
    if to_regclass(v_name) is null then
      begin
        if exists (select 1 from tracker_events_default where received_on >= v_week and received_on < v_week + 7) then
          execute format('create table %I (like tracker_events including defaults including constraints)', v_name);
          execute format('insert into %I select * from tracker_events_default where received_on >= $1 and received_on < $2', v_name)
            using v_week, v_week + 7;
          delete from tracker_events_default where received_on >= v_week and received_on < v_week + 7;
          execute format('alter table tracker_events attach partition %I for values from (%L) to (%L)', v_name, v_week, v_week + 7);
        else
          execute format('create table %I partition of tracker_events for values from (%L) to (%L)', v_name, v_week, v_week + 7);
        end if;
        v_made := v_made + 1;
      exception when lock_not_available then
        exit;
      end;
    end if;
    v_week := v_week + 7;
  end loop;
  perform set_config('lock_timeout', v_lock_timeout, true);
  return v_made;
end
$$;
