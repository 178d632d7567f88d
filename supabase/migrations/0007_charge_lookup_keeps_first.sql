-- Two first lookups of one IP by one account at the same moment (two replicas, two tabs) both reach
-- the providers and both store a result. sl_charge_lookup used to keep the last one in ip_cache
-- while each process kept its own in memory, so replicas could answer differently for 7 days.
-- Now the stored result stands until it expires (the account's row lock orders the two calls), and
-- the function returns the row as stored, with its remaining lifetime in the database's own clock,
-- so every cache in front of Postgres copies exactly it. The charge is unchanged: each call did
-- the work it is charged for.
drop function sl_charge_lookup(uuid, text, inet, integer, jsonb, interval);

create function sl_charge_lookup(p_account uuid, p_operation text, p_ip inet, p_cost integer, p_result jsonb, p_ttl interval)
returns table (balance integer, result jsonb, ttl_ms float8)
language plpgsql as $$
declare
  v_balance integer;
begin
  select credit_balance into v_balance from accounts where id = p_account for update;
  if v_balance is null then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  if p_cost > 0 then
    if v_balance < p_cost then
      raise exception 'not enough credits: % needed, % available', p_cost, v_balance
        using errcode = 'SL402', detail = jsonb_build_object('credits_required', p_cost, 'credit_balance', v_balance)::text;
    end if;
    update accounts set credit_balance = credit_balance - p_cost where id = p_account;
    insert into credit_transactions (account_id, type, amount, operation, ip) values (p_account, 'debit', p_cost, p_operation, p_ip);
    v_balance := v_balance - p_cost;
  end if;
  insert into ip_cache as c (account_id, operation, ip, result, expires_at)
  values (p_account, p_operation, p_ip, p_result, now() + p_ttl)
  on conflict (account_id, operation, ip) do update
    set result = excluded.result, created_at = now(), expires_at = excluded.expires_at
    where c.expires_at <= now();
  return query
    select v_balance, c.result, (extract(epoch from (c.expires_at - now())) * 1000)::float8
    from ip_cache c
    where c.account_id = p_account and c.operation = p_operation and c.ip = p_ip;
end
$$;
