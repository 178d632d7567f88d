/*
 * After the balance of p_account changed (locked by the caller): emits credits.low once per dip below
 * the auto-reload threshold and, when p_may_claim, claims a reload when one is wanted and none is in
 * flight or cooling off after a decline. Returns true when the caller must charge the reload (after
 * commit, through the payment port). Credits arriving (a reload, a grant) do not claim: nobody on
 * those paths charges, and the next debit below the threshold does.
 */
create or replace function sl_after_balance_change(p_account uuid, p_may_claim boolean default true) returns boolean
language plpgsql as $$
declare
  v_acct accounts;
begin
  select * into v_acct from accounts where id = p_account;
  if v_acct.credit_balance >= v_acct.auto_reload_threshold then
    if v_acct.credits_low_at is not null then
      update accounts set credits_low_at = null where id = p_account;
    end if;
    return false;
  end if;
  if v_acct.credits_low_at is null and v_acct.auto_reload_threshold > 0 then
    update accounts set credits_low_at = now() where id = p_account;
    perform sl_emit(p_account, null, 'credits.low', jsonb_build_object(
      'balance', v_acct.credit_balance, 'threshold', v_acct.auto_reload_threshold,
      'auto_reload_enabled', v_acct.auto_reload_enabled), 'account');
  end if;
  if p_may_claim and v_acct.auto_reload_enabled and v_acct.auto_reload_amount is not null
     and v_acct.payment_method_id is not null and v_acct.credit_price_pence is not null
     and (v_acct.credit_reload_started_at is null or v_acct.credit_reload_started_at < now() - interval '10 minutes')
     and (v_acct.credit_reload_declined_at is null or v_acct.credit_reload_declined_at < now()
          - least(interval '24 hours', interval '1 hour' * power(2, greatest(v_acct.credit_reload_declines - 1, 0)))) then
    update accounts set credit_reload_started_at = now(), credit_reload_key = coalesce(credit_reload_key, gen_random_uuid()::text)
    where id = p_account;
    return true;
  end if;
  return false;
end
$$;
