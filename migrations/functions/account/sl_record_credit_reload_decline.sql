-- A declined reload: the claim and its key end, the next claim cools off (sl_after_balance_change), and the account hears of it.
create or replace function sl_record_credit_reload_decline(p_account uuid, p_amount integer, p_reason text) returns void
language plpgsql as $$
begin
  update accounts set credit_reload_started_at = null, credit_reload_key = null,
    credit_reload_declines = credit_reload_declines + 1, credit_reload_declined_at = now()
  where id = p_account;
  perform sl_emit(p_account, null, 'credits.reload_failed', jsonb_build_object('amount', p_amount, 'reason', left(p_reason, 300)), 'account');
end
$$;
