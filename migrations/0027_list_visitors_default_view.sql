-- list-visitors without a search, read by its indexes (issue 14).
--
-- The request without `search` is the dashboard's default view and what an incremental sync sends.
-- Through the statement of migration 0013 it gathered the whole window before sorting it: at
-- 1,000,000 visitors over 90 days, the last 30 days are 333,000 rows, each carried with its columns
-- through a materialized CTE, hashed to find the addresses an api row repeats, sorted for a page of
-- 100, and counted: 350 to 400 ms for one request alone, over a second at 8 connections
-- (npm run bench -- visitors, "request without search").
--
-- Without a search the rows a page needs are the newest ones, and every part of the set has an
-- index in last_seen order: each tracker's identified visitors (visitors_identified) and the key's
-- lookups (api_lookups_recent). So the page is the newest limit + offset rows of each part, merged
-- and sorted: the rows read grow with the page, not with the window. The total is counted apart,
-- by an index-only count of the visitors and a count of the lookups whose address no listed visitor
-- has (one primary-key probe each), with no row carried or sorted. At 1M: about 20 ms for the
-- visitors and 90 ms for 33,000 lookups, the bulk of what is left.
--
-- The search keeps the statement of 0013 (its label and address branches already read only what
-- they match). Both now hand the page's keys, in order, to one statement that writes the rows as
-- JSON, so the row format is written once.

-- A listed row before its JSON: the keys that order the page and the visitor's own columns.
create type sl_listed_visitor as (
  website_id uuid,
  ip inet,
  last_seen timestamptz,
  source text,
  row_id uuid,
  first_seen timestamptz,
  visit_count integer,
  pages_viewed integer,
  active_ms bigint,
  high_intent boolean,
  identified_count integer,
  is_watched boolean,
  is_pinned boolean,
  crm_status text
);

/*
 * One page of list-visitors: as in migration 0013 (same parameters, same answer), with the
 * request without search served by its own statements.
 */
create or replace function sl_list_visitors(
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
  v_total integer;
  v_page sl_listed_visitor[];
  -- A part's rows that can reach the page: the page's own, and those the offset skips.
  v_reach bigint := p_limit::bigint + p_offset;
begin
  -- The account's trackers, their domains at the same positions (read here once, not once per row).
  select coalesce(array_agg(w.id), '{}'), coalesce(array_agg(w.domain), '{}'),
         coalesce(array_agg(w.id) filter (where p_site is null or w.domain = p_site), '{}')
    into v_all, v_domains, v_sites
    from websites w join api_keys k on k.id = w.api_key_id where k.account_id = p_account_id;

  if p_pattern is null and p_address_from is null then
    -- Every identified visitor of the listed trackers in the window, and every lookup of the key in
    -- it whose address none of those visitors has.
    select (select count(*) from visitors v
            where p_trackers and v.website_id = any(v_sites) and v.identification_id is not null and v.last_seen >= p_since)
         + (select count(*) from api_lookups a
            where p_api and a.api_key_id = p_api_key_id and a.last_seen >= p_since
              and (p_trackers is not true or not exists (
                select 1 from visitors v
                where v.website_id = any(v_sites) and v.ip = a.ip and v.identification_id is not null and v.last_seen >= p_since)))
      into v_total;
    -- The page from the newest rows of each part: each tracker's and the lookups', in the page's order.
    v_page := array(
      select row(m.*)::sl_listed_visitor from (
        select v.website_id, v.ip, v.last_seen, 'tracker'::text, v.identification_id, v.first_seen, v.visit_count, v.pages_viewed,
               v.active_ms, v.high_intent, v.identified_count, v.is_watched, v.is_pinned, v.crm_status
        from unnest(v_sites) s(id)
        cross join lateral (
          select * from visitors v
          where p_trackers and v.website_id = s.id and v.identification_id is not null and v.last_seen >= p_since
          order by v.last_seen desc, v.ip
          limit v_reach
        ) v
        union all
        select * from (
          select null::uuid, a.ip, a.last_seen, 'api'::text, a.id, null::timestamptz, null::integer, null::integer,
                 null::bigint, null::boolean, null::integer, null::boolean, null::boolean, null::text
          from api_lookups a
          where p_api and a.api_key_id = p_api_key_id and a.last_seen >= p_since
            and (p_trackers is not true or not exists (
              select 1 from visitors v
              where v.website_id = any(v_sites) and v.ip = a.ip and v.identification_id is not null and v.last_seen >= p_since))
          order by a.last_seen desc, a.ip
          limit v_reach
        ) a
      ) m (website_id, ip, last_seen, source, row_id, first_seen, visit_count, pages_viewed, active_ms, high_intent,
           identified_count, is_watched, is_pinned, crm_status)
      order by m.last_seen desc, m.ip, m.website_id nulls last
      limit p_limit offset p_offset);
  else
    v_labels := case when p_pattern is null then '{}'::bigint[]
                     else array(select l.id from search_labels l where l.label like p_pattern) end;
    with tracked as (
      select v.website_id, v.ip, v.last_seen, v.identification_id as row_id, v.first_seen, v.visit_count, v.pages_viewed,
             v.active_ms, v.high_intent, v.identified_count, v.is_watched, v.is_pinned, v.crm_status
      from (
        -- The label matches, plus the address matches that are not label matches already.
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
        -- The same two branches over the key's own lookups.
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
    )
    select (select count(*) from matching),
           array(select row(m.*)::sl_listed_visitor from matching m
                 order by m.last_seen desc, m.ip, m.website_id nulls last
                 limit p_limit offset p_offset)
      into v_total, v_page;
  end if;

  -- The page as JSON text, keys in the contract's order: answered as it is, not parsed into rows and
  -- written out again by the server.
  return query
  select v_total, cardinality(v_page), coalesce(json_agg(r order by p.n), '[]')::text
  from unnest(v_page) with ordinality p (website_id, ip, last_seen, source, row_id, first_seen, visit_count, pages_viewed,
                                         active_ms, high_intent, identified_count, is_watched, is_pinned, crm_status, n)
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
  ) r;
end
$$;
