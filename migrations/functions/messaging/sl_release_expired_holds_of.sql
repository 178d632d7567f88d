/*
 * Gives back p_account's holds that expired. The caller holds the account's row lock. Returns how
 * many went back.
 */
create or replace function sl_release_expired_holds_of(p_account uuid) returns integer
language plpgsql as $$
declare
  v_amount integer;
  v_count integer;
begin
  with gone as (
    delete from credit_holds where account_id = p_account and expires_at <= clock_timestamp() returning amount
  )
  select coalesce(sum(amount), 0)::integer, count(*)::integer into v_amount, v_count from gone;
  if v_amount > 0 then
    update accounts set credit_balance = credit_balance + v_amount where id = p_account;
  end if;
  return v_count;
end
$$;
