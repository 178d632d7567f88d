/*
 * Credits a completed top-up exactly once per payment reference (a replayed confirmation is a no-op).
 * For a child: child.topup_changed (purchase) and, when it lifts a suspension, child.reactivated.
 * For a pool: clears the in-flight reload and the decline streak.
 */
create or replace function sl_credit_topup(p_payment_ref text, p_pool uuid, p_child uuid, p_amount integer, p_source text)
returns boolean
language plpgsql as $$
declare
  v_topup uuid;
  s child_subscriptions;
  v_partner uuid;
begin
  if p_amount is null or p_amount <= 0 then
    raise exception 'a top-up must be a positive number of IDs' using errcode = 'SL400';
  end if;
  if p_child is not null then
    select * into s from child_subscriptions where api_key_id = p_child for update;
    if s.id is null then
      raise exception 'child % has no subscription', p_child using errcode = 'SL404';
    end if;
  end if;
  insert into topups (pool_id, child_api_key_id, amount_ids, status, source, payment_intent_id)
  values (p_pool, p_child, p_amount, 'completed', p_source, p_payment_ref)
  on conflict (payment_intent_id) do nothing
  returning id into v_topup;
  if v_topup is null then
    return false;
  end if;
  if p_child is not null then
    v_partner := sl_partner_of((select parent_api_key_id from api_keys where id = p_child));
    perform sl_add_child_topup(v_partner, p_child, s, p_amount, 'purchase');
  else
    update pools set topup_balance = topup_balance + p_amount,
                     reload_started_at = case when p_source = 'auto_reload' then null else reload_started_at end,
                     consecutive_declines = case when p_source = 'auto_reload' then 0 else consecutive_declines end
    where id = p_pool;
    if not found then
      raise exception 'no pool %', p_pool using errcode = 'SL404';
    end if;
  end if;
  return true;
end
$$;
