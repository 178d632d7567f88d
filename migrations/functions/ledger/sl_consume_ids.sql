/*
 * Takes p_n IDs for the managed child p_key at once, when every one of them comes from the child's
 * monthly quota and its pool's, and none is the child's last: the common case of a settle batch
 * (sl_settle_identifications), which would otherwise take the child's row, its key's status and the
 * pool's row p_n times in one transaction. Five statements for the lot: the read, p_n ledger rows
 * (written before the child's row is taken, as sl_consume_id writes its one), the subscription
 * update (which takes the row, its WHERE re-checked on the row as the previous holder left it), the
 * key's status read after that lock, the pool update. The lock order is sl_consume_id's (child
 * subscription, key, pool).
 *
 * consumed = false: nothing was taken (another case: a direct tracker, a top-up, an empty pool, the
 * child's last ID, a suspended key, a race lost), and the caller takes the IDs one at a time with
 * sl_consume_id, which decides each of those cases. The result is then exactly what p_n calls of
 * sl_consume_id would have left: p_n ledger rows of ('quota', 'quota'), the child's and pool's
 * counts up by p_n, no suspension (the last ID is never taken here) and no event.
 * reload_pool_id: set when this call claimed an auto-reload for the pool (the caller charges it).
 */
create or replace function sl_consume_ids(p_key uuid, p_n integer)
returns table (consumed boolean, reload_pool_id uuid, partner_account_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  g record;
  v_ledger bigint[];
  v_status text;
  v_wants_reload boolean;
  v_reload uuid;
begin
  select * into g from sl_child_funding where api_key_id = p_key;
  if p_n < 1 or g.sub_id is null or g.pool_id is null or g.key_status <> 'active' or g.sub_status <> 'active'
     or g.used + p_n >= g.quota or g.pool_used + p_n > g.pool_quota then
    return query select false, null::uuid, null::uuid;
    return;
  end if;

  with written as (
    insert into id_ledger (child_api_key_id, pool_id, child_source, pool_source)
    select p_key, g.pool_id, 'quota', 'quota' from generate_series(1, p_n)
    returning id
  )
  select array_agg(id) into v_ledger from written;

  update child_subscriptions s
  set ids_used_this_period = s.ids_used_this_period + p_n
  where s.id = g.sub_id and s.status = 'active' and s.ids_used_this_period + p_n < s.monthly_id_quota;
  if found then
    -- Read after the lock, in its own statement: a suspension or revocation committed by the
    -- holder we waited for is seen.
    select status into v_status from api_keys where id = p_key;
    if v_status = 'active' then
      update pools
      set ids_used_this_period = ids_used_this_period + p_n
      where id = g.pool_id and ids_used_this_period + p_n <= monthly_id_quota
      returning auto_reload_enabled and auto_reload_threshold_ids is not null
                and greatest(0, monthly_id_quota - ids_used_this_period) + topup_balance < auto_reload_threshold_ids
                and (reload_started_at is null or reload_started_at < now() - interval '10 minutes')
      into v_wants_reload;
      if found then
        -- Read under the pool's lock: no claim is tried while a reload is in flight.
        if v_wants_reload and sl_claim_reload(g.pool_id) then
          v_reload := g.pool_id;
        end if;
        return query select true, v_reload, g.partner;
        return;
      end if;
    end if;
    -- The key is no longer active, or the pool no longer has what was read: the IDs go back.
    update child_subscriptions set ids_used_this_period = ids_used_this_period - p_n where id = g.sub_id;
  end if;
  delete from id_ledger where id = any(v_ledger);
  return query select false, null::uuid, null::uuid;
end
$$;
