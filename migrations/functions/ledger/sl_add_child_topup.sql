/*
 * Adds p_amount top-up IDs to child p_child, whose subscription s the caller has locked (it read s
 * under that lock, so s.topup_balance is the balance before): emits child.topup_changed with
 * p_reason (purchase | gift) and lifts a quota suspension the new IDs end (child.reactivated).
 * What a purchased top-up (sl_credit_topup) and a transfer from the pool (sl_transfer_topup) share.
 */
create or replace function sl_add_child_topup(p_partner uuid, p_child uuid, s child_subscriptions, p_amount integer, p_reason text)
returns void
language plpgsql as $$
begin
  update child_subscriptions set topup_balance = topup_balance + p_amount where id = s.id;
  perform sl_emit(p_partner, p_child, 'child.topup_changed', jsonb_build_object(
    'child_api_key_id', p_child,
    'previous_topup_balance', s.topup_balance,
    'topup_balance', s.topup_balance + p_amount,
    'delta', p_amount,
    'reason', p_reason));
  perform sl_reactivate_if_able(p_partner, p_child, 'topup_purchased');
end
$$;
