-- list-visitors as one SQL function, planned once per connection.
--
-- The listing was one statement sent by the verb inside a transaction that first set
-- plan_cache_mode and jit: five round trips, and a custom plan made for every request (~1 ms of
-- planning for a ~2 ms search at 1M visitors). As a function it is one round trip, and its
-- statement is written so that the one generic plan is right for every request: each way of
-- matching is a branch behind a one-time filter on the parameters (only the branches a request
-- uses run), the address prefix is a range the index can take as a parameter, and the page's rows
-- are looked up by key. It answers the page as JSON text, which the server sends as it is.
-- npm run bench -- visitors has the figures; docs/decisions.md the reasons.

-- sl_iso was declared immutable over to_char, which is only stable, so Postgres could not inline
-- it and ran it as a function call per value: two per listed row. Stable is what it is.
create or replace function sl_iso(ts timestamptz) returns text
language sql stable parallel safe as $$
  select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- list-visitors' lookup_count for a tracker row: the address's identifications on the site (one
-- per billing period), counted as each is made instead of counted again on every listing.
alter table visitors add column identified_count integer not null default 0 check (identified_count >= 0);
update visitors v set identified_count = x.n
from (select website_id, ip, count(*)::integer as n from identifications where status = 'identified' group by website_id, ip) x
where x.website_id = v.website_id and x.ip = v.ip;
alter table visitors add constraint visitors_identified_counted check (identification_id is null or identified_count > 0);

-- As in 0011, and the identification counted on the visitor in the same statement that makes it current.
create or replace function sl_settle_identification(p_id uuid, p_result jsonb, p_cache jsonb, p_ttl interval)
returns table (outcome text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  i identifications;
  r identifications;
  c record;
  v_owner uuid;
  v_partner uuid;
begin
  select * into i from identifications where id = p_id for update;
  if i.id is null or i.status <> 'pending' then
    return query select 'settled'::text, null::uuid, null::uuid, false;
    return;
  end if;
  select account_id into v_owner from api_keys where id = i.api_key_id;
  if p_cache is not null then
    insert into ip_cache as x (account_id, operation, ip, result, expires_at)
    values (v_owner, 'tracker', i.ip, p_cache, now() + p_ttl)
    on conflict (account_id, operation, ip) do update
      set result = excluded.result, created_at = now(), expires_at = excluded.expires_at
      where x.expires_at <= now();
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
  update visitors
  set identification_id = p_id, identified_count = identified_count + 1,
      label_id = sl_search_label(concat_ws(' ', r.person_linkedin_name, r.company_name, r.domain))
  where website_id = i.website_id and ip = i.ip;
  v_partner := coalesce(c.partner_account_id, v_owner);
  perform sl_emit(v_partner, i.api_key_id, 'visitor_identified', sl_visitor_identified_data(p_id), 'child');
  return query select c.outcome, c.reload_pool_id, v_partner, true;
end
$$;

/*
 * One page of list-visitors (packages/core/src/tracker/list-visitors.ts has the contract): the
 * identified visitors of account p_account_id's trackers (p_site: one of them) and, for `source`
 * all/api, key p_api_key_id's own identified lookups, an address a tracker listed not listed again
 * as an api row; last_seen at or after p_since; newest first. One row: `total`, the whole filtered
 * set; `count`, the rows in the page; `visitors`, the page as a JSON array (text).
 *
 * `search`: p_pattern (a LIKE pattern, lower case) picks the labels that contain the term, by their
 * trigram index, and the rows carrying them are read by (website, label, last_seen); an address-like
 * term also matches addresses whose text lies in [p_address_from, p_address_to), its prefix range.
 *
 * Planned once per connection (force_generic_plan), so the statement must not depend on a custom
 * plan: the branches are gated by one-time filters, the page's rows are fetched by lateral lookups
 * (a generic plan cannot know the page is small and would hash whole tables), and seqscans are off
 * because every read here has an index that bounds it by what it finds — a scan would cost what the
 * table holds, and the planner, costing LIKE as cheap, prefers scanning a small label table to its
 * trigram index, which is ten times faster. jit off: compiling costs more than a listing saves.
 */
create function sl_list_visitors(
  p_account_id uuid, p_api_key_id uuid, p_site text, p_since timestamptz, p_pattern text,
  p_address_from text, p_address_to text, p_trackers boolean, p_api boolean, p_limit integer, p_offset integer)
returns table (total integer, count integer, visitors text)
language plpgsql stable
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set jit = off
as $$
#variable_conflict use_column
declare
  v_all uuid[];
  v_domains text[];
  v_sites uuid[];
  v_labels bigint[] := '{}';
begin
  -- The account's trackers, their domains at the same positions (read here once, not once per row).
  select coalesce(array_agg(w.id), '{}'), coalesce(array_agg(w.domain), '{}'),
         coalesce(array_agg(w.id) filter (where p_site is null or w.domain = p_site), '{}')
    into v_all, v_domains, v_sites
    from websites w join api_keys k on k.id = w.api_key_id where k.account_id = p_account_id;
  if p_pattern is not null then
    v_labels := array(select l.id from search_labels l where l.label like p_pattern);
  end if;
  return query
  with tracked as (
    select v.website_id, v.ip, v.last_seen, v.identification_id as row_id, v.first_seen, v.visit_count, v.pages_viewed,
           v.active_ms, v.high_intent, v.identified_count, v.is_watched, v.is_pinned, v.crm_status
    from (
      -- Everything (no search), or the label matches plus the address matches that are not label matches already.
      select * from visitors v
      where p_trackers and p_pattern is null
        and v.website_id = any(v_sites) and v.identification_id is not null and v.last_seen >= p_since
      union all
      select * from visitors v
      where p_trackers and p_pattern is not null and v.label_id = any(v_labels)
        and v.website_id = any(v_sites) and v.identification_id is not null and v.last_seen >= p_since
      union all
      select * from visitors v
      where p_trackers and p_address_from is not null and host(v.ip) ~>=~ p_address_from and host(v.ip) ~<~ p_address_to
        and v.website_id = any(v_sites) and v.identification_id is not null and v.last_seen >= p_since
        and (v.label_id is null or v.label_id <> all(v_labels))
    ) v
  ), looked_up as (
    select a.ip, a.last_seen, a.id as row_id
    from (
      -- The same three branches over the key's own lookups.
      select * from api_lookups a
      where p_api and p_pattern is null and a.api_key_id = p_api_key_id and a.last_seen >= p_since
      union all
      select * from api_lookups a
      where p_api and p_pattern is not null and a.label_id = any(v_labels) and a.api_key_id = p_api_key_id and a.last_seen >= p_since
      union all
      select * from api_lookups a
      where p_api and p_address_from is not null and host(a.ip) ~>=~ p_address_from and host(a.ip) ~<~ p_address_to
        and a.api_key_id = p_api_key_id and a.last_seen >= p_since and a.label_id <> all(v_labels)
    ) a
  ), matching as (
    select t.website_id, t.ip, t.last_seen, 'tracker'::text as source, t.row_id, t.first_seen, t.visit_count, t.pages_viewed,
           t.active_ms, t.high_intent, t.identified_count, t.is_watched, t.is_pinned, t.crm_status
    from tracked t
    union all
    select null::uuid, l.ip, l.last_seen, 'api'::text, l.row_id, null, null, null, null, null, null, null, null, null
    from looked_up l
    where not exists (select 1 from tracked t where t.ip = l.ip)
  ), page as (
    select m.* from matching m
    order by m.last_seen desc, m.ip, m.website_id nulls last
    limit p_limit offset p_offset
  ), counted as (
    select count(*)::integer as total from matching
  )
  -- The page as JSON text, keys in the contract's order: answered as it is, not parsed into rows and
  -- written out again by the server.
  select c.total, count(p.ip)::integer,
         coalesce(json_agg(r order by p.last_seen desc, p.ip, p.website_id nulls last) filter (where p.ip is not null), '[]')::text
  from counted c
  left join page p on true
  -- Limited, so not flattened into joins: each looked up by its key.
  left join lateral (
    select i.identification_type, i.person_linkedin_url, i.person_linkedin_name, i.person_linkedin_title,
           i.person_linkedin_company, i.domain, i.company_name, i.company_linkedin_url, i.confidence, i.country,
           i.industry, i.employees
    from identifications i where p.source = 'tracker' and i.id = p.row_id limit 1
  ) i on true
  left join lateral (
    select a.company_name, a.domain, a.confidence, a.first_seen, a.country, a.lookup_count
    from api_lookups a where p.source = 'api' and a.id = p.row_id limit 1
  ) a on true
  cross join lateral (select
    host(p.ip) as ip, p.source,
    coalesce(i.identification_type, 'company') as identification_type,
    coalesce(i.person_linkedin_name, i.company_name, a.company_name) as display_name,
    i.person_linkedin_url, i.person_linkedin_name, i.person_linkedin_title, i.person_linkedin_company,
    coalesce(i.domain, a.domain) as domain, coalesce(i.company_name, a.company_name) as company_name,
    i.company_linkedin_url, coalesce(i.confidence, a.confidence)::float8 as confidence,
    sl_iso(p.last_seen) as last_seen, sl_iso(coalesce(p.first_seen, a.first_seen)) as first_seen,
    coalesce(p.visit_count, 0) as visit_count, coalesce(p.pages_viewed, 0) as pages_viewed,
    coalesce(p.active_ms / 1000, 0)::integer as active_seconds,
    v_domains[array_position(v_all, p.website_id)] as tracker_site, nullif(coalesce(i.country, a.country), '') as country, i.industry, i.employees,
    coalesce(p.high_intent, false) as high_intent,
    p.row_id::text as raw_id,
    coalesce(p.identified_count, a.lookup_count) as lookup_count,
    -- With one tracker, a tracker row's address has visited exactly that one.
    case when p.source = 'tracker' and cardinality(v_all) = 1 then v_domains
         else array(select distinct v_domains[array_position(v_all, o.website_id)] as domain from visitors o
                    where o.ip = p.ip and o.website_id = any(v_all) order by domain) end as sites_visited,
    coalesce(p.is_watched, false) as is_watched, coalesce(p.is_pinned, false) as is_pinned, p.crm_status
  ) r
  group by c.total;
end
$$;
