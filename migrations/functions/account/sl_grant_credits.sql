-- Operator grants also end a dip below the threshold.
create or replace function sl_grant_credits(p_account uuid, p_amount integer) returns integer
language plpgsql as $$
declare
  v_balance integer;
begin
  if p_amount is null or p_amount <= 0 then
    raise exception 'credits must be a positive integer' using errcode = 'SL400';
  end if;
  update accounts set credit_balance = credit_balance + p_amount where id = p_account returning credit_balance into v_balance;
  if v_balance is null then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  insert into credit_transactions (account_id, type, amount, operation) values (p_account, 'grant', p_amount, 'grant');
  perform sl_after_balance_change(p_account, false);
  return v_balance;
end
$$;
