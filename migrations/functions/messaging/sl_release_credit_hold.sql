/*
 * Gives back the hold of request p_key, if it has one (locking the account). Nothing else changes:
 * no transaction row, no event, as if the credits had never left. Returns whether there was one.
 */
create or replace function sl_release_credit_hold(p_account uuid, p_key uuid) returns boolean
language plpgsql as $$
declare
  v_amount integer;
begin
  perform 1 from accounts where id = p_account for update;
  delete from credit_holds where account_id = p_account and idempotency_key = p_key returning amount into v_amount;
  if v_amount is null then
    return false;
  end if;
  update accounts set credit_balance = credit_balance + v_amount where id = p_account;
  return true;
end
$$;
