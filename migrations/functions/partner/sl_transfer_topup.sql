/*
 * partner-transfer-topup: moves top-up IDs from the partner pool to a child, both or neither.
 */
create or replace function sl_transfer_topup(p_master uuid, p_child uuid, p_amount integer)
returns table (partner_topup_balance integer, child_topup_balance integer)
language plpgsql as $$
#variable_conflict use_column
declare
  s child_subscriptions;
  v_partner uuid := sl_partner_of(p_master);
  p pools;
begin
  if p_amount is null or p_amount <= 0 then
    raise exception 'amount must be a positive integer' using errcode = 'SL400';
  end if;
  s := sl_lock_child(p_master, p_child);
  select * into p from pools where account_id = v_partner for update;
  if p.id is null then
    raise exception 'the partner has no pool subscription' using errcode = 'SL404';
  end if;
  if p.topup_balance < p_amount then
    raise exception 'the partner top-up balance (%) is lower than the amount (%)', p.topup_balance, p_amount
      using errcode = 'SL402',
            detail = jsonb_build_object('partner_topup_balance', p.topup_balance, 'requested_amount', p_amount)::text;
  end if;
  update pools set topup_balance = topup_balance - p_amount where id = p.id;
  perform sl_add_child_topup(v_partner, p_child, s, p_amount, 'gift');
  return query select p.topup_balance - p_amount, s.topup_balance + p_amount;
end
$$;
