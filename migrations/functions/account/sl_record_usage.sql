/*
 * Adds a batch of counts from a process's usage meter: [{account_id, operation, calls}]. Rows are
 * applied in key order, so two replicas flushing overlapping batches cannot deadlock.
 */
create or replace function sl_record_usage(p_rows jsonb) returns integer
language sql as $$
  with input as (
    select (r ->> 'account_id')::uuid as account_id, r ->> 'operation' as operation, sum((r ->> 'calls')::bigint) as calls
    from jsonb_array_elements(p_rows) r
    group by 1, 2
  ), applied as (
    insert into usage_daily (account_id, day, operation, calls)
    select i.account_id, (now() at time zone 'UTC')::date, i.operation, i.calls
    from input i
    -- An account deleted since the request was counted has nobody to report to.
    where i.calls > 0 and exists (select 1 from accounts a where a.id = i.account_id)
    order by i.account_id, i.operation
    on conflict (account_id, day, operation) do update set calls = usage_daily.calls + excluded.calls
    returning 1
  )
  select count(*)::int from applied
$$;
