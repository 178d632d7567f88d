/*
 * Settles several claimed identifications in one transaction, each as sl_settle_locked_identification
 * settles one, taking their rows in the lock order at the top of this file: the visitors that the
 * identified ones will point at, then the identifications, then the account's cached lookups (p_cache
 * stored for the owner's account for p_ttl; the first stored result stands until it expires, as in
 * sl_charge_lookup), then each is settled (the ledger's rows), in (website, unit) order. The order
 * is this function's, whatever order the items come in. The worker sends one tracker key's at a
 * time (tracker/settle-identifications.ts says why: two keys of one partner in one transaction can
 * deadlock on the partner's pool). p_items: a JSON array of {id, result, cache}, `cache` null when
 * the lookup was not fresh. One row per item, in the order they were settled.
 */
create or replace function sl_settle_identifications(p_items jsonb, p_ttl interval)
returns table (id uuid, outcome text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  v_ids uuid[];
  v_results jsonb[];
  v_caches jsonb[];
  v_n integer;
begin
  -- The items in settling order; an id with no identification any more comes last and is answered `settled`.
  select array_agg(x.id order by i.website_id, i.unit, x.id), array_agg(x.result order by i.website_id, i.unit, x.id),
         array_agg(x.cache order by i.website_id, i.unit, x.id)
  into v_ids, v_results, v_caches
  from (
    select (e.value->>'id')::uuid as id, e.value->'result' as result, nullif(e.value->'cache', 'null'::jsonb) as cache
    from jsonb_array_elements(p_items) e
  ) x
  left join identifications i on i.id = x.id;
  v_n := coalesce(cardinality(v_ids), 0);
  if v_n = 0 then
    return;
  end if;

  -- 2. The visitors the identified ones will point at (every visitor of the unit on the website).
  perform 1
  from unnest(v_ids, v_results) as x(id, result)
  join identifications i on i.id = x.id and i.status = 'pending'
  join visitors v on v.website_id = i.website_id and v.ip >= i.unit and v.ip <= sl_unit_last(i.unit) and v.ip <<= i.unit
  where x.result->>'status' = 'identified'
  order by v.website_id, v.ip
  for update of v;
  -- 3. The identifications.
  perform 1 from identifications i where i.id = any(v_ids) order by i.website_id, i.unit, i.id for update;
  -- 4. The owner's cached lookups, one row per address (two websites of the account can share one).
  insert into ip_cache as x (account_id, operation, ip, result, expires_at)
  select distinct on (k.account_id, i.ip) k.account_id, 'tracker', i.ip, c.cache, now() + p_ttl
  from unnest(v_ids, v_caches) with ordinality as c(id, cache, n)
  join identifications i on i.id = c.id and i.status = 'pending'
  join api_keys k on k.id = i.api_key_id
  where c.cache is not null
  order by k.account_id, i.ip, c.n
  on conflict (account_id, operation, ip) do update
    set result = excluded.result, created_at = now(), expires_at = excluded.expires_at
    where x.expires_at <= now();
  -- 5. Each settled, in the same order.
  for k in 1 .. v_n loop
    return query
      select v_ids[k], s.outcome, s.reload_pool_id, s.partner_account_id, s.emitted
      from sl_settle_locked_identification(v_ids[k], v_results[k]) s;
  end loop;
end
$$;
