/*
 * Debits p_amount credits for p_operation (locking the account). Raises SL402 when the balance is
 * below the amount; nothing changes. Returns whether a reload was claimed (sl_after_balance_change).
 */
create or replace function sl_debit_credits(p_account uuid, p_operation text, p_amount integer, p_user uuid, p_reference uuid)
returns boolean
language plpgsql as $$
declare
  v_balance integer;
begin
  select credit_balance into v_balance from accounts where id = p_account for update;
  if v_balance is null then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  if p_amount <= 0 then
    return false;
  end if;
  if v_balance < p_amount then
    raise exception 'not enough credits: % needed, % available', p_amount, v_balance
      using errcode = 'SL402', detail = jsonb_build_object('credits_required', p_amount, 'credit_balance', v_balance)::text;
  end if;
  update accounts set credit_balance = credit_balance - p_amount where id = p_account;
  insert into credit_transactions (account_id, type, amount, operation, user_id, reference_id)
  values (p_account, 'debit', p_amount, p_operation, p_user, p_reference);
  return sl_after_balance_change(p_account);
end
$$;
