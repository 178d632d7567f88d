/*
 * Credits a reload charge once per payment reference, ends the in-flight mark and emits
 * credits.reloaded. A replayed confirmation credits nothing and returns null.
 */
create or replace function sl_credit_reload(p_account uuid, p_payment_ref text, p_amount integer) returns integer
language plpgsql as $$
declare
  v_balance integer;
begin
  perform 1 from accounts where id = p_account for update;
  insert into credit_transactions (account_id, type, amount, operation, payment_ref)
  values (p_account, 'reload', p_amount, 'auto_reload', p_payment_ref)
  on conflict (payment_ref) do nothing;
  if not found then
    return null;
  end if;
  update accounts set credit_balance = credit_balance + p_amount, credit_reload_started_at = null, credit_reload_key = null,
    credit_reload_declines = 0, credit_reload_declined_at = null
  where id = p_account returning credit_balance into v_balance;
  perform sl_emit(p_account, null, 'credits.reloaded', jsonb_build_object('amount', p_amount, 'balance', v_balance, 'payment_ref', p_payment_ref), 'account');
  perform sl_after_balance_change(p_account, false);
  return v_balance;
end
$$;
