/*
 * visitors-export (packages/core/src/tracker/export-visitors.ts): every row list-visitors lists for
 * the same filters (sl_list_visitors has their rules), in its order, each as the JSON text of one
 * VisitorRow, for the caller to read through a cursor. One statement: the listing's deduplication
 * (a lookup whose address a tracker row of the window, matching the search, has is not listed
 * again), then the marks' filters (an api row has none).
 *
 * A whole window is read, so there is no page to bound and no count: the planner picks its scans
 * (plain SQL, inlined into the caller's cursor, and sl_listed_visitor_row into it). Each row is
 * written by sl_listed_visitor_row, as sl_list_visitors writes its page's; tests/visitor-marks.test.ts
 * holds the two to the same rows.
 */
create or replace function sl_export_visitors(
  p_account_id uuid, p_api_key_id uuid, p_site text, p_since timestamptz, p_until timestamptz, p_pattern text,
  p_address_from text, p_address_to text, p_trackers boolean, p_api boolean, p_watched boolean, p_pinned boolean)
returns table (visitor text)
language sql stable
as $$
  with keyed as (
    -- The trackers the key can read (only its own for a key scoped to its websites), the listed
    -- ones among them, and the search's labels.
    select coalesce(array_agg(w.id), '{}') as all_ids, coalesce(array_agg(w.domain), '{}') as domains,
           coalesce(array_agg(w.id) filter (where p_site is null or w.domain = p_site), '{}') as sites,
           array(select l.id from search_labels l where p_pattern is not null and l.label like p_pattern) as labels
    from websites w join api_keys k on k.id = w.api_key_id
    join api_keys me on me.id = p_api_key_id
    where k.account_id = p_account_id and (me.scope = 'account' or w.api_key_id = me.id)
  ), tracked as (
    select v.website_id, v.ip, v.last_seen, v.identification_id as row_id, v.first_seen, v.visit_count, v.pages_viewed,
           v.active_ms, v.high_intent, v.identified_count, v.is_watched, v.is_pinned, v.crm_status
    from keyed k join visitors v on v.website_id = any(k.sites)
    where p_trackers and v.identification_id is not null
      and v.last_seen >= p_since and v.last_seen < coalesce(p_until, 'infinity')
      and ((p_pattern is null and p_address_from is null)
           or (p_pattern is not null and v.label_id = any(k.labels))
           or (p_address_from is not null and host(v.ip) ~>=~ p_address_from and host(v.ip) ~<~ p_address_to))
  ), listed as (
    select t.website_id, t.ip, t.last_seen, 'tracker'::text as source, t.row_id, t.first_seen, t.visit_count, t.pages_viewed,
           t.active_ms, t.high_intent, t.identified_count, t.is_watched, t.is_pinned, t.crm_status
    from tracked t
    where (p_watched is null or t.is_watched = p_watched) and (p_pinned is null or t.is_pinned = p_pinned)
    union all
    select null::uuid, a.ip, a.last_seen, 'api'::text, a.id, null::timestamptz, null::integer, null::integer,
           null::bigint, null::boolean, null::integer, null::boolean, null::boolean, null::text
    from keyed k join api_lookups a on a.api_key_id = p_api_key_id
    where p_api and p_watched is not true and p_pinned is not true
      and a.last_seen >= p_since and a.last_seen < coalesce(p_until, 'infinity')
      and ((p_pattern is null and p_address_from is null)
           or (p_pattern is not null and a.label_id = any(k.labels))
           or (p_address_from is not null and host(a.ip) ~>=~ p_address_from and host(a.ip) ~<~ p_address_to))
      and not exists (select 1 from tracked t where t.ip = a.ip)
  )
  select row_to_json(r)::text
  from listed p cross join keyed k
  cross join lateral sl_listed_visitor_row(p::sl_listed_visitor, k.all_ids, k.domains) r
  order by p.last_seen desc, p.ip, p.website_id nulls last
$$;
