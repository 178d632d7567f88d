-- Visitor identification: one lock order for aggregation and settling, an IPv6 visitor keyed on
-- its /64, and no outbox row for a `visitor_identified` nobody can receive.
--
-- Locking: aggregation (sl_apply_tracker_events) and settling (sl_settle_identifications) share the
-- visitors and identifications rows, and a transaction that takes several of the rows below takes
-- them in this order, each kind sorted by the key given, sorted by Postgres (inet order, where
-- 45.10.9.1 < 45.10.10.1; never by the address's text, where it is the other way round):
--   1. visitor_sessions rows, by (website_id, ip, session_id)      aggregation only
--   2. visitors rows, by (website_id, ip)
--   3. identifications rows, by (website_id, unit, id)             aggregation: the insert's unique check
--   4. ip_cache rows, by (account_id, ip)                          settling only
--   5. the key's child_subscriptions row, its key, its pool         settling only (sl_consume_id, 0002)
-- A settle batch locks the visitors its identifications will be attached to before it locks any
-- identification (the settle used to take them one identification after another, in the order the
-- worker sent them, sorted in JavaScript by the address's text): a settle that had updated an
-- identification and then waited for its visitor deadlocked with an aggregation that held the visitor
-- and waited, in its insert's unique check, for that identification's settle to commit. After step
-- 2 a settle never waits for an aggregation: the visitors its update meets that it did not lock
-- first (an address of the /64 that arrived meanwhile) are skipped if another transaction holds
-- them, and that aggregation attaches them itself. Step 5 is 0002's order, unchanged.
--
-- The identification unit: an identification is one per (website, unit, billing period), where the
-- unit is the address for IPv4 and the /64 network for IPv6 (sl_identification_unit). One host, one
-- office LAN or one mobile device rotates its privacy addresses through its /64: keyed on the address,
-- 60 addresses of one /64 used 50 IDs and suspended the child. Visitors still record their full
-- address; the identification keeps the address it was queued with (the one the waterfall looks
-- up), and every visitor of its unit on the website points at it once it is identified.

/*
 * What an identification is keyed on for address p_ip: the /64 network for IPv6, the address itself
 * for IPv4 and for an IPv4-mapped IPv6 address (::ffff:a.b.c.d; collect stores those unmapped, and
 * their /64 would be every mapped address at once).
 */
create function sl_identification_unit(p_ip inet) returns inet
language sql immutable parallel safe as $$
  select case when family(p_ip) = 6 and not p_ip <<= '::ffff:0:0/96'::inet then network(set_masklen(p_ip, 64))::inet else p_ip end
$$;

/*
 * The last host address of unit p_unit, so that `ip between unit and sl_unit_last(unit)` is a btree
 * range over visitors (website_id, ip): `ip <<= unit` alone uses the index only for a constant unit.
 */
create function sl_unit_last(p_unit inet) returns inet
language sql immutable parallel safe as $$
  select set_masklen(broadcast(p_unit), case family(p_unit) when 4 then 32 else 128 end)
$$;

alter table identifications
  add column unit inet not null generated always as (sl_identification_unit(ip)) stored,
  -- Only an IPv6 identification settled before this migration that shares its /64, website and
  -- period with another: it was keyed on its address and stays out of the unit's uniqueness.
  add column keyed_by_address boolean not null default false,
  add constraint identifications_keyed_by_address_settled check (not keyed_by_address or (status <> 'pending' and family(ip) = 6));

-- Identifications queued before this rule that share a unit, website and period: one is kept (a
-- settled one first). A pending extra is removed (it used nothing; the kept one is its unit's); a
-- settled extra used its ID already and stays, keyed by its address.
with ranked as (
  select id, status, row_number() over (
    partition by website_id, unit, period_start order by status = 'pending', identified_at, created_at, id) as n
  from identifications
)
delete from identifications d using ranked r where d.id = r.id and r.n > 1 and r.status = 'pending';
with ranked as (
  select id, row_number() over (partition by website_id, unit, period_start order by identified_at, created_at, id) as n
  from identifications
)
update identifications d set keyed_by_address = true from ranked r where d.id = r.id and r.n > 1;

alter table identifications drop constraint identifications_website_id_ip_period_start_key;
create unique index identifications_one_per_unit on identifications (website_id, unit, period_start) where not keyed_by_address;
-- What the dropped constraint's index served: finding an identification by its own address.
create index identifications_by_address on identifications (website_id, ip, period_start);

/*
 * Takes the given events off the queue and applies those it took: folds them into their visitors
 * (step 1 and 2 of the lock order above), queues one pending identification per unit (address, or
 * IPv6 /64), website and period whose tracker key is active, in unit order (step 3), and attaches
 * the IPv6 visitors of the claim that are new to an identified /64 to its identification. An id not
 * on the queue (already applied) is skipped, so applying twice counts once. Returns how many it took
 * off the queue.
 */
create or replace function sl_apply_tracker_events(p_ids bigint[]) returns integer
language plpgsql as $$
declare
  v_ids bigint[];
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
    on conflict (website_id, unit, period_start) where not keyed_by_address do nothing
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
  return cardinality(v_ids);
end
$$;

/*
 * Settles one identification whose rows the caller has locked in the lock order
 * (sl_settle_identifications: its visitors, then it). p_result is the verdict as identification
 * columns (status `identified` or `failed`).
 *
 * A failed one (no business behind the address) uses nothing. An identified one uses one ID
 * (sl_consume_id): consumed (or an account the ledger does not meter) → recorded, made the current
 * identification of every visitor of its unit on the website, and `visitor_identified` written to
 * the outbox if the key has a webhook now (with none there is nobody to send it to, ever: an event
 * goes to the webhook set when it was emitted or nowhere, so the row would only keep the visitor's
 * address); anything else (suspended, revoked, canceled, out of IDs, pool exhausted) → nothing is
 * identified and the pending row is removed, so a later visit in the period can queue it again.
 * An identification already settled (a second worker after a lease ran out) is left alone.
 * `emitted`: some event for a webhook was written (this one, or the ledger's `child.*`).
 */
create function sl_settle_locked_identification(p_id uuid, p_result jsonb)
returns table (outcome text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  i identifications;
  r identifications;
  c record;
  v_owner uuid;
  v_partner uuid;
  v_label bigint;
  v_sent boolean := false;
begin
  -- Held already (the caller took it in order); taken here too so a settle is never unlocked.
  select * into i from identifications where id = p_id for update;
  if i.id is null or i.status <> 'pending' then
    return query select 'settled'::text, null::uuid, null::uuid, false;
    return;
  end if;
  r := jsonb_populate_record(null::identifications, p_result);

  if r.status = 'failed' then
    update identifications
    set status = 'failed', identified_at = clock_timestamp(), lease_until = null,
        traffic_type = r.traffic_type, reason = r.reason, confidence = r.confidence, country = r.country
    where id = p_id;
    return query select 'failed'::text, null::uuid, null::uuid, false;
    return;
  end if;

  select * into c from sl_consume_id(i.api_key_id);
  if c.outcome not in ('consumed', 'not_metered') then
    delete from identifications where id = p_id;
    return query select c.outcome, c.reload_pool_id, c.partner_account_id, c.emitted;
    return;
  end if;

  update identifications
  set status = 'identified', identified_at = clock_timestamp(), lease_until = null,
      identification_type = r.identification_type, traffic_type = r.traffic_type, reason = r.reason,
      confidence = r.confidence, country = r.country, domain = r.domain, company_name = r.company_name,
      company_linkedin_url = r.company_linkedin_url, industry = r.industry, employee_range = r.employee_range,
      employees = r.employees, location = r.location,
      person_linkedin_url = r.person_linkedin_url, person_linkedin_name = r.person_linkedin_name,
      person_linkedin_title = r.person_linkedin_title, person_linkedin_company = r.person_linkedin_company
  where id = p_id;
  v_label := sl_search_label(concat_ws(' ', r.person_linkedin_name, r.company_name, r.domain));
  -- Every visitor of the unit: the caller locked those there were; one that arrived since and that
  -- an aggregation holds is skipped (waiting for it could deadlock), and that aggregation attaches it.
  update visitors v
  set identification_id = p_id, identified_count = v.identified_count + 1, label_id = v_label
  from (
    select u.website_id, u.ip from visitors u
    where u.website_id = i.website_id and u.ip >= i.unit and u.ip <= sl_unit_last(i.unit) and u.ip <<= i.unit
    for update skip locked
  ) u
  where v.website_id = u.website_id and v.ip = u.ip;
  select account_id into v_owner from api_keys where id = i.api_key_id;
  v_partner := coalesce(c.partner_account_id, v_owner);
  if sl_event_has_destination('child', v_partner, i.api_key_id) then
    perform sl_emit(v_partner, i.api_key_id, 'visitor_identified', sl_visitor_identified_data(p_id), 'child');
    v_sent := true;
  end if;
  return query select c.outcome, c.reload_pool_id, v_partner, v_sent or c.emitted;
end
$$;

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

/* One identification, settled as sl_settle_identifications settles a batch (in the same lock order). */
create or replace function sl_settle_identification(p_id uuid, p_result jsonb, p_cache jsonb, p_ttl interval)
returns table (outcome text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language sql as $$
  select s.outcome, s.reload_pool_id, s.partner_account_id, s.emitted
  from sl_settle_identifications(jsonb_build_array(jsonb_build_object('id', p_id, 'result', p_result, 'cache', p_cache)), p_ttl) s
$$;
