/*
 * The sweep: gives back the expired holds of up to p_limit accounts (an account busy right now is
 * skipped: its own next hold, or the next sweep, gives them back). Returns how many went back.
 */
create or replace function sl_release_expired_credit_holds(p_limit integer) returns integer
language plpgsql as $$
declare
  v_account uuid;
  v_released integer := 0;
begin
  for v_account in
    select a.id from accounts a
    where a.id in (select h.account_id from credit_holds h where h.expires_at <= clock_timestamp() limit p_limit)
    order by a.id
    for update of a skip locked
  loop
    v_released := v_released + sl_release_expired_holds_of(v_account);
  end loop;
  return v_released;
end
$$;
