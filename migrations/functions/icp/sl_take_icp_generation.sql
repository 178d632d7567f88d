/*
 * Takes one ICP generation from p_account's allowance (the caller holds the account's lock): SL429
 * when sl_icp_generations_per_hour() started in the last hour already, its detail `retry_after` the
 * seconds until the oldest of them leaves the window. Rows past the hour are deleted here, so the
 * log never holds more than the allowance per account.
 */
create or replace function sl_take_icp_generation(p_account uuid) returns void
language plpgsql as $$
declare
  v_count integer;
  v_oldest timestamptz;
  v_wait integer;
begin
  delete from icp_generation_log where account_id = p_account and started_at <= now() - interval '1 hour';
  select count(*)::integer, min(started_at) into v_count, v_oldest from icp_generation_log where account_id = p_account;
  if v_count >= sl_icp_generations_per_hour() then
    v_wait := greatest(1, ceil(extract(epoch from v_oldest + interval '1 hour' - now())))::integer;
    raise exception 'this account started % ICP generations in the last hour, the most allowed; the next is possible in % s', v_count, v_wait
      using errcode = 'SL429', detail = jsonb_build_object('retry_after', v_wait)::text;
  end if;
  insert into icp_generation_log (account_id) values (p_account);
end
$$;
