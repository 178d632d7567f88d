/*
 * Charges one lookup and caches its result in the same transaction. Raises SL402 when the balance
 * is below the cost (nothing changes). A cost of 0 only caches. Returns the balance after.
 * A result the account already holds unexpired (a concurrent first lookup of the same address,
 * which committed while this one waited for the account's lock) is returned as it stands and not
 * charged again: one address, one charge per 7 days.
 */
create or replace function sl_charge_lookup(p_account uuid, p_operation text, p_ip inet, p_cost integer, p_result jsonb, p_ttl interval)
returns table (balance integer, result jsonb, ttl_ms float8, reload boolean)
language plpgsql as $$
declare
  v_balance integer;
  v_reload boolean := false;
begin
  select credit_balance into v_balance from accounts where id = p_account for update;
  if v_balance is null then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  return query
    select v_balance, c.result, (extract(epoch from (c.expires_at - now())) * 1000)::float8, false
    from ip_cache c
    where c.account_id = p_account and c.operation = p_operation and c.ip = p_ip and c.expires_at > now();
  if found then
    return;
  end if;
  if p_cost > 0 then
    if v_balance < p_cost then
      raise exception 'not enough credits: % needed, % available', p_cost, v_balance
        using errcode = 'SL402', detail = jsonb_build_object('credits_required', p_cost, 'credit_balance', v_balance)::text;
    end if;
    update accounts set credit_balance = credit_balance - p_cost where id = p_account;
    insert into credit_transactions (account_id, type, amount, operation, ip) values (p_account, 'debit', p_cost, p_operation, p_ip);
    v_balance := v_balance - p_cost;
    v_reload := sl_after_balance_change(p_account);
  end if;
  insert into ip_cache as c (account_id, operation, ip, result, expires_at)
  values (p_account, p_operation, p_ip, p_result, now() + p_ttl)
  on conflict (account_id, operation, ip) do update
    set result = excluded.result, created_at = now(), expires_at = excluded.expires_at
    where c.expires_at <= now();
  return query
    select v_balance, c.result, (extract(epoch from (c.expires_at - now())) * 1000)::float8, v_reload
    from ip_cache c
    where c.account_id = p_account and c.operation = p_operation and c.ip = p_ip;
end
$$;
