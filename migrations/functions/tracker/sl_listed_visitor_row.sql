/*
 * A listed visitor (sl_listed_visitor, migration 0027: the keys that order a listing and the
 * visitor's own columns) as the row list-visitors answers (packages/core/src/tracker/list-visitors.ts
 * has the contract), its columns in the contract's key order, written once for sl_list_visitors (a
 * page, as one JSON array) and sl_export_visitors (every row, each as JSON text). p_all, p_domains:
 * the trackers the key can read and their domains at the same positions.
 *
 * Plain SQL returning a set, so the planner inlines it into the caller's statement as the lateral
 * joins it holds: the row's identification or lookup is probed by its key for each listed row the
 * caller reads (limited, so never flattened into a join over the whole table), and the export still
 * streams. Pass a row constructor (sl_list_visitors) or a listed row cast to sl_listed_visitor
 * (sl_export_visitors; the cast is expanded into one): the planner then reads each field as the
 * caller's own column, in the probes too, where a whole-row value would be built for every row.
 */
create or replace function sl_listed_visitor_row(p_listed sl_listed_visitor, p_all uuid[], p_domains text[])
returns table (
  ip text, source text, identification_type text, display_name text, person_linkedin_url text, person_linkedin_name text,
  person_linkedin_title text, person_linkedin_company text, domain text, company_name text, company_linkedin_url text,
  confidence float8, last_seen text, first_seen text, visit_count integer, pages_viewed integer, active_seconds integer,
  tracker_site text, country text, industry text, employees integer, high_intent boolean, raw_id text, lookup_count integer,
  sites_visited text[], is_watched boolean, is_pinned boolean, crm_status text, crm_id text)
language sql stable
as $$
  select
    host(p_listed.ip), p_listed.source,
    coalesce(i.identification_type, 'company'),
    coalesce(i.person_linkedin_name, i.company_name, a.company_name),
    i.person_linkedin_url, i.person_linkedin_name, i.person_linkedin_title, i.person_linkedin_company,
    coalesce(i.domain, a.domain), coalesce(i.company_name, a.company_name),
    i.company_linkedin_url, coalesce(i.confidence, a.confidence)::float8,
    sl_iso(p_listed.last_seen), sl_iso(coalesce(p_listed.first_seen, a.first_seen)),
    coalesce(p_listed.visit_count, 0), coalesce(p_listed.pages_viewed, 0),
    coalesce(p_listed.active_ms / 1000, 0)::integer,
    p_domains[array_position(p_all, p_listed.website_id)], nullif(coalesce(i.country, a.country), ''), i.industry, i.employees,
    coalesce(p_listed.high_intent, false),
    p_listed.row_id::text,
    coalesce(p_listed.identified_count, a.lookup_count),
    -- With one tracker, a tracker row's address has visited exactly that one.
    case when p_listed.source = 'tracker' and cardinality(p_all) = 1 then p_domains
         else array(select distinct p_domains[array_position(p_all, o.website_id)] as domain from visitors o
                    where o.ip = p_listed.ip and o.website_id = any(p_all) order by domain) end,
    coalesce(p_listed.is_watched, false), coalesce(p_listed.is_pinned, false), p_listed.crm_status,
    -- The CRM's company id, read only for the rows an integration pushed.
    case when p_listed.crm_status is not null
         then (select o.crm_id from visitors o where o.website_id = p_listed.website_id and o.ip = p_listed.ip) end
  from (select) listed
  -- Limited, so not flattened into joins: each looked up by its key.
  left join lateral (
    select i.identification_type, i.person_linkedin_url, i.person_linkedin_name, i.person_linkedin_title,
           i.person_linkedin_company, i.domain, i.company_name, i.company_linkedin_url, i.confidence, i.country,
           i.industry, i.employees
    from identifications i where p_listed.source = 'tracker' and i.id = p_listed.row_id limit 1
  ) i on true
  left join lateral (
    select a.company_name, a.domain, a.confidence, a.first_seen, a.country, a.lookup_count
    from api_lookups a where p_listed.source = 'api' and a.id = p_listed.row_id limit 1
  ) a on true
$$;
