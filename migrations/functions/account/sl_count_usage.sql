-- Adds p_calls to today's (UTC) usage count of p_operation for p_account (usage_daily).
create or replace function sl_count_usage(p_account uuid, p_operation text, p_calls bigint) returns void
language sql as $$
  insert into usage_daily (account_id, day, operation, calls)
  values (p_account, (now() at time zone 'UTC')::date, p_operation, p_calls)
  on conflict (account_id, day, operation) do update set calls = usage_daily.calls + excluded.calls
$$;
