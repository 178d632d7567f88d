/*
 * Holds p_amount credits of p_account for request p_key until p_ttl_ms from now, before any
 * provider or engine is called. Under the account's lock: expired holds go back first, then a hold
 * this key still has (a repeat that took the key over from a worker whose lease ran out) goes back
 * too, so a key holds once; then SL402 (with credits_required and credit_balance) unless
 * `credit_balance >= p_amount`, else the credits leave the balance. Returns the balance left.
 */
create or replace function sl_hold_credits(p_account uuid, p_key uuid, p_amount integer, p_ttl_ms integer) returns integer
language plpgsql as $$
declare
  v_balance integer;
begin
  perform 1 from accounts where id = p_account for update;
  if not found then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  perform sl_release_expired_holds_of(p_account);
  perform sl_release_credit_hold(p_account, p_key);
  select credit_balance into v_balance from accounts where id = p_account;
  if v_balance < p_amount then
    raise exception 'not enough credits: % needed, % available', p_amount, v_balance
      using errcode = 'SL402', detail = jsonb_build_object('credits_required', p_amount, 'credit_balance', v_balance)::text;
  end if;
  update accounts set credit_balance = credit_balance - p_amount where id = p_account returning credit_balance into v_balance;
  insert into credit_holds (account_id, idempotency_key, amount, expires_at)
  values (p_account, p_key, p_amount, clock_timestamp() + p_ttl_ms * interval '1 millisecond');
  return v_balance;
end
$$;
