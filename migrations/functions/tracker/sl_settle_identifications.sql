/*
 * Settles several claimed identifications in one transaction, each as sl_settle_locked_identification
 * settles one, taking their rows in the lock order at the top of this file: the visitors that the
 * identified ones will point at, then the identifications, then the account's cached lookups (p_cache
 * stored for the owner's account for p_ttl; the first stored result stands until it expires, as in
 * sl_charge_lookup), then the IDs the identified ones use, taken at once where they can be
 * (sl_consume_ids), then each is settled (the ledger's rows), in (website, unit) order. The order
 * is this function's, whatever order the items come in. The worker sends one tracker key's at a
 * time (tracker/settle-identifications.ts says why: two keys of one partner in one transaction can
 * deadlock on the partner's pool). p_items: a JSON array of {id, result, cache}, `cache` null when
 * the lookup was not fresh. One row per item, in the order they were settled; the visitors of the
 * identified ones are pointed at them after the loop, in one statement.
 */
create or replace function sl_settle_identifications(p_items jsonb, p_ttl interval)
returns table (id uuid, outcome text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  v_ids uuid[];
  v_results jsonb[];
  v_caches jsonb[];
  v_sites uuid[];
  v_units inet[];
  v_pending boolean[];
  v_held uuid[];
  v_n integer;
  v_settled record;
  v_outcomes text[] := '{}';
  v_pools uuid[] := '{}';
  v_partners uuid[] := '{}';
  v_emitted boolean[] := '{}';
  v_excluded text[] := '{}';
  v_rules boolean;
  v_payers uuid[];
  v_paying integer;
  v_paid record;
  v_paid_by uuid;
  v_reload uuid;
begin
  -- The items in settling order; an id with no identification any more comes last and is answered `settled`.
  -- With each, what steps 2 and 4 read of it, so they never look it up again: a lookup by id that
  -- also tests `status = 'pending'` can be planned on the pending index instead of the key, and then
  -- reads every pending row once per item (a third of a settle's time under a backlog).
  select array_agg(x.id order by i.website_id, i.unit, x.id), array_agg(x.result order by i.website_id, i.unit, x.id),
         array_agg(x.cache order by i.website_id, i.unit, x.id), array_agg(i.website_id order by i.website_id, i.unit, x.id),
         array_agg(i.unit order by i.website_id, i.unit, x.id), array_agg(i.status = 'pending' order by i.website_id, i.unit, x.id)
  into v_ids, v_results, v_caches, v_sites, v_units, v_pending
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
  from unnest(v_sites, v_units, v_pending, v_results) as x(website_id, unit, pending, result)
  join visitors v on v.website_id = x.website_id and v.ip >= x.unit and v.ip <= sl_unit_last(x.unit) and v.ip <<= x.unit
  where x.pending and x.result->>'status' = 'identified'
  order by v.website_id, v.ip
  for update of v;
  -- 3. The identifications, and which of them are still pending once held.
  select coalesce(array_agg(l.id), '{}') into v_held
  from (select i.id, i.status from identifications i where i.id = any(v_ids) order by i.website_id, i.unit, i.id for update) l
  where l.status = 'pending';
  -- 4. The owner's cached lookups, one row per address (two websites of the account can share one).
  insert into ip_cache as x (account_id, operation, ip, result, expires_at)
  select distinct on (k.account_id, i.ip) k.account_id, 'tracker', i.ip, c.cache, now() + p_ttl
  from unnest(v_ids, v_caches) with ordinality as c(id, cache, n)
  join identifications i on i.id = c.id
  join api_keys k on k.id = i.api_key_id
  where c.cache is not null and c.id = any(v_held)
  order by k.account_id, i.ip, c.n
  on conflict (account_id, operation, ip) do update
    set result = excluded.result, created_at = now(), expires_at = excluded.expires_at
    where x.expires_at <= now();
  -- 5. The traffic rule that excludes each held one (sl_traffic_exclusion), asked once here so that
  -- the IDs taken in step 6 are exactly the ones the settles use; a batch whose websites have no
  -- country or domain rule asks nothing.
  select exists (
    select 1 from websites w join api_keys k on k.id = w.api_key_id
    join traffic_rules r on r.website_id = w.id or (r.website_id is null and r.account_id = k.account_id)
    where w.id = any(v_sites) and r.kind in ('country', 'domain')) into v_rules;
  for k in 1 .. v_n loop
    v_excluded[k] := case when v_rules and v_ids[k] = any(v_held) then sl_traffic_exclusion(v_sites[k], v_results[k]->>'country',
      case when v_results[k]->>'status' = 'identified' then v_results[k]->>'domain' end) end;
  end loop;
  -- 6. The IDs of the ones that will use one, taken at once when they are one key's and come from its
  -- quota and its pool's (sl_consume_ids); otherwise each settle takes its own (sl_consume_id).
  select array_agg(distinct i.api_key_id), count(distinct x.id)::int into v_payers, v_paying
  from unnest(v_ids, v_results, v_excluded) as x(id, result, excluded)
  join identifications i on i.id = x.id
  where x.id = any(v_held) and x.result->>'status' = 'identified' and x.excluded is null;
  if v_paying > 1 and cardinality(v_payers) = 1 then
    select * into v_paid from sl_consume_ids(v_payers[1], v_paying);
    if v_paid.consumed then
      v_paid_by := v_paid.partner_account_id;
      v_reload := v_paid.reload_pool_id;
    end if;
  end if;
  -- 7. Each settled, in the same order; a reload the batch's IDs claimed is reported once.
  for k in 1 .. v_n loop
    select s.outcome, s.reload_pool_id, s.partner_account_id, s.emitted into v_settled
    -- An id given twice is settled once (the second finds it settled), so its ID is paid once.
    from sl_settle_locked_identification(v_ids[k], v_results[k], v_excluded[k],
      case when v_ids[k] = any(v_held) and v_results[k]->>'status' = 'identified' and v_excluded[k] is null
                and not v_ids[k] = any(v_ids[1:k - 1]) then v_paid_by end) s;
    v_outcomes[k] := v_settled.outcome;
    v_pools[k] := coalesce(v_settled.reload_pool_id, case when v_settled.outcome = 'consumed' and v_paid_by is not null then v_reload end);
    if v_pools[k] is not null and v_pools[k] = v_reload then
      v_reload := null;
    end if;
    v_partners[k] := v_settled.partner_account_id;
    v_emitted[k] := v_settled.emitted;
  end loop;
  -- 8. The visitors of the identified ones' units point at them: one statement for the batch, so
  -- the visitors' statement triggers (list-visitors' counts, 0034) run once, not once per settle.
  -- Step 2 locked the visitors there were; one that arrived since and that an aggregation holds is
  -- skipped (waiting for it could deadlock), and that aggregation attaches it.
  -- A visitor met by two of the batch (its unit pending in two periods) counts both and points at
  -- the one settled last, as two statements in settling order left it.
  update visitors v
  set identification_id = u.identification_id, identified_count = v.identified_count + u.n, label_id = sl_search_label(u.label)
  from (
    select l.website_id, l.ip, (array_agg(l.identification_id order by l.k desc))[1] as identification_id,
           (array_agg(l.label order by l.k desc))[1] as label, count(*)::int as n
    from (
      select u.website_id, u.ip, i.id as identification_id, x.k,
             concat_ws(' ', i.person_linkedin_name, i.company_name, i.domain) as label
      from unnest(v_ids, v_outcomes) with ordinality as x(id, outcome, k)
      join identifications i on i.id = x.id
      join visitors u on u.website_id = i.website_id and u.ip >= i.unit and u.ip <= sl_unit_last(i.unit) and u.ip <<= i.unit
      where x.outcome in ('consumed', 'not_metered')
      order by u.website_id, u.ip
      for update of u skip locked
    ) l
    group by l.website_id, l.ip
  ) u
  where v.website_id = u.website_id and v.ip = u.ip;
  return query
    select x.id, x.outcome, x.reload_pool_id, x.partner_account_id, x.emitted
    from unnest(v_ids, v_outcomes, v_pools, v_partners, v_emitted) with ordinality as x(id, outcome, reload_pool_id, partner_account_id, emitted, n)
    order by x.n;
end
$$;
