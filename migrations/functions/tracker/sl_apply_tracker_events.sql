/*
 * Takes the given events off the queue and applies those it took: marks those a traffic rule of
 * their website excludes (an address or a page: sl_exclude_tracker_events), which go no further;
 * folds the rest into their visitors (steps 1 and 2 of the lock order in
 * migrations/functions/README.md), queues one pending identification per unit (address, or IPv6
 * /64), website and period whose tracker key is active, in unit order (step 3), and attaches the
 * IPv6 visitors of the claim that are new to an identified /64 to its identification. A unit whose
 * identification this period was excluded (a country or a company domain) is queued again when no
 * rule excludes it any more, so removing a rule lets the next beacon through. An id not on the queue
 * (already applied) is skipped, so applying twice counts once. Returns how many it took off the queue.
 */
create or replace function sl_apply_tracker_events(p_ids bigint[]) returns integer
language plpgsql as $$
declare
  v_ids bigint[];
  v_taken integer;
  v_excluded bigint[];
  v_sites uuid[];
  v_ips inet[];
begin
  with taken as (
    delete from tracker_queue where event_id = any(p_ids) returning event_id
  )
  select array_agg(event_id order by event_id) into v_ids from taken;
  if v_ids is null then
    return 0;
  end if;
  v_taken := cardinality(v_ids);
  v_excluded := sl_exclude_tracker_events(v_ids);
  if cardinality(v_excluded) > 0 then
    v_ids := array(select x from unnest(v_ids) x where x <> all(v_excluded) order by x);
  end if;
  perform sl_fold_tracker_events(v_ids);
  with e as materialized (
    select t.id, t.website_id, t.ip, sl_identification_unit(t.ip) as unit, t.api_key_id
    from tracker_events t join api_keys k on k.id = t.api_key_id
    where t.id = any(v_ids) and not t.is_bot and k.status = 'active'
  ),
  q as (
    select distinct on (e.website_id, e.unit) e.website_id, e.unit, e.ip, e.api_key_id
    from e
    order by e.website_id, e.unit, e.id desc
  ),
  -- Materialized: inlined, the subquery would be flattened into the join and the function called
  -- once per visitor again (0026).
  periods as materialized (
    select k.api_key_id, sl_identification_period(k.api_key_id) as period_start
    from (select distinct api_key_id from q) k
  ),
  queued as (
    insert into identifications (website_id, ip, api_key_id, period_start)
    select q.website_id, q.ip, q.api_key_id, p.period_start
    from q join periods p on p.api_key_id = q.api_key_id
    order by q.website_id, q.unit
    on conflict (website_id, unit, period_start) where not keyed_by_address do update
      set status = 'pending', excluded_by = null, identified_at = null, lease_until = null, attempts = 0,
          traffic_type = null, reason = null, confidence = null, country = null, domain = null, company_name = null
      where identifications.status = 'excluded'
        and sl_traffic_exclusion(identifications.website_id, identifications.country, identifications.domain) is null
  )
  select array_agg(n.website_id order by n.website_id, n.ip), array_agg(n.ip order by n.website_id, n.ip)
  into v_sites, v_ips
  from (select distinct e.website_id, e.ip from e where e.unit <> e.ip) n;
  -- An IPv6 address of a /64 identified before it arrived shares the identification (the settle
  -- pointed the visitors it found at it). A statement of its own, so it sees a settle that the
  -- insert above waited for. An IPv4 claim skips it.
  if v_ips is not null then
    update visitors v
    set identification_id = i.id, identified_count = v.identified_count + 1,
        label_id = sl_search_label(concat_ws(' ', i.person_linkedin_name, i.company_name, i.domain))
    from unnest(v_sites, v_ips) as n(website_id, ip)
    cross join lateral (
      select x.id, x.status, x.person_linkedin_name, x.company_name, x.domain from identifications x
      where x.website_id = n.website_id and x.unit = sl_identification_unit(n.ip) and not x.keyed_by_address
      order by x.period_start desc
      limit 1
    ) i
    where i.status = 'identified' and v.website_id = n.website_id and v.ip = n.ip and v.identification_id is distinct from i.id;
  end if;
  return v_taken;
end
$$;
