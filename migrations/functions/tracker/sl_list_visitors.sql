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

/*
 * One page of list-visitors: as in migration 0027, but a key scoped to its own websites lists only
 * the trackers it owns (a released child's key in the partner's account), as if the account's other
 * trackers were another account's. The key's scope is read here from its row, so no caller can widen
 * it. Same parameters, same answer for every key scoped to its account.
 *
 * Without a search the total is not counted over the window (migration 0034): the hourly counts of
 * the listed trackers' identified visitors and of the key's lookups are summed for the whole hours
 * after since's, and the rows of since's hour counted by index; less, for one tracker owned by the
 * key, the pairs of a tracker row and a lookup of its address, counted the same way but for since's
 * hour, whose whole minutes are summed and only since's own minute probed (migration 0042); with
 * several trackers an address can pair with each, so those lookups are probed one by one.
 *
 * p_until (null: none) is the window's top, exclusive: the hours from since's next to until's own
 * are summed, the rows of the two partial hours counted by index, and the pairs probed (their
 * counts are by the older row's hour, which cannot tell whether the newer one is below until).
 *
 * p_watched / p_pinned (null: either) filter on the visitor's marks (migration 0038) after the
 * deduplication: an api row has no marks (false), and a lookup whose address a tracker row of the
 * window has stays hidden whatever that row's marks. A `true` filter lists the marked rows alone,
 * read from their indexes; a `false` one keeps the paths above and subtracts the window's marked
 * rows. Pinned rows are not sorted first: newest last_seen first is what an incremental sync relies on.
 */
create or replace function sl_list_visitors(
  p_account_id uuid, p_api_key_id uuid, p_site text, p_since timestamptz, p_pattern text,
  p_address_from text, p_address_to text, p_trackers boolean, p_api boolean, p_limit integer, p_offset integer,
  p_until timestamptz, p_watched boolean, p_pinned boolean)
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
  v_total bigint := 0;
  -- The hour after since's, from which the hourly counts are summed.
  v_next timestamptz;
  -- The minute after since's, from which the pairs' counts by the minute are summed up to v_next.
  v_minute timestamptz;
  -- The window's top (infinity without one) and the hour it falls in, up to which they are summed.
  v_until timestamptz := coalesce(p_until, 'infinity');
  v_top timestamptz := date_trunc('hour', coalesce(p_until, 'infinity'), 'UTC');
  -- The listed trackers are one, owned by the key: the counts of pairs answer for it.
  v_own_site boolean;
  v_page sl_listed_visitor[];
  -- A part's rows that can reach the page: the page's own, and those the offset skips.
  v_reach bigint := p_limit::bigint + p_offset;
begin
  -- The trackers the key can read, their domains at the same positions (read here once, not once
  -- per row): the account's, or only its own for a key scoped to its websites.
  select coalesce(array_agg(w.id), '{}'), coalesce(array_agg(w.domain), '{}'),
         coalesce(array_agg(w.id) filter (where p_site is null or w.domain = p_site), '{}'),
         count(*) filter (where p_site is null or w.domain = p_site) = 1
           and bool_and(w.api_key_id = p_api_key_id) filter (where p_site is null or w.domain = p_site)
    into v_all, v_domains, v_sites, v_own_site
    from websites w join api_keys k on k.id = w.api_key_id
    join api_keys me on me.id = p_api_key_id
    where k.account_id = p_account_id and (me.scope = 'account' or w.api_key_id = me.id);

  if p_pattern is null and p_address_from is null and (p_watched is true or p_pinned is true) then
    -- Marked rows only (a lookup has no marks): each tracker's, read from the index of the marked
    -- rows the filter names, in the page's order; few, so counted and sorted whole.
    with marked as (
      select v.website_id, v.ip, v.last_seen, v.identification_id, v.first_seen, v.visit_count, v.pages_viewed,
             v.active_ms, v.high_intent, v.identified_count, v.is_watched, v.is_pinned, v.crm_status
      from visitors v
      where p_trackers and p_watched is true and v.is_watched and v.identification_id is not null
        and v.website_id = any(v_sites) and v.last_seen >= p_since and v.last_seen < v_until
        and (p_pinned is null or v.is_pinned = p_pinned)
      union all
      select v.website_id, v.ip, v.last_seen, v.identification_id, v.first_seen, v.visit_count, v.pages_viewed,
             v.active_ms, v.high_intent, v.identified_count, v.is_watched, v.is_pinned, v.crm_status
      from visitors v
      where p_trackers and p_watched is not true and p_pinned is true and v.is_pinned and v.identification_id is not null
        and v.website_id = any(v_sites) and v.last_seen >= p_since and v.last_seen < v_until
        and (p_watched is null or v.is_watched = p_watched)
    )
    select (select count(*) from marked),
           array(select row(m.website_id, m.ip, m.last_seen, 'tracker', m.identification_id, m.first_seen, m.visit_count,
                            m.pages_viewed, m.active_ms, m.high_intent, m.identified_count, m.is_watched, m.is_pinned,
                            m.crm_status)::sl_listed_visitor
                 from marked m
                 order by m.last_seen desc, m.ip, m.website_id
                 limit p_limit offset p_offset)
      into v_total, v_page;
  elsif p_pattern is null and p_address_from is null then
    -- Every identified visitor of the listed trackers in the window, and every lookup of the key in
    -- it whose address none of those visitors has: the rows of the window by the hourly counts of
    -- migration 0034 (the whole hours after since's and before until's) and by their indexes (the
    -- rows of since's own hour and of until's).
    v_next := date_trunc('hour', p_since, 'UTC') + interval '1 hour';
    if p_trackers then
      v_total := (select coalesce(sum(c.n), 0) from visitor_listing_counts c
                  where c.scope_id = any(v_sites) and c.kind = 'visitors' and c.hour >= v_next and c.hour < v_top)
               + (select count(*) from visitors v
                  where v.website_id = any(v_sites) and v.identification_id is not null
                    and v.last_seen >= p_since and v.last_seen < least(v_next, v_until))
               + (select count(*) from visitors v
                  where v.website_id = any(v_sites) and v.identification_id is not null
                    and v.last_seen >= greatest(v_top, v_next) and v.last_seen < v_until);
    end if;
    if p_api then
      v_total := v_total
               + (select coalesce(sum(c.n), 0) from visitor_listing_counts c
                  where c.scope_id = p_api_key_id and c.kind = 'lookups' and c.hour >= v_next and c.hour < v_top)
               + (select count(*) from api_lookups a
                  where a.api_key_id = p_api_key_id and a.last_seen >= p_since and a.last_seen < least(v_next, v_until))
               + (select count(*) from api_lookups a
                  where a.api_key_id = p_api_key_id and a.last_seen >= greatest(v_top, v_next) and a.last_seen < v_until);
    end if;
    if p_trackers and p_api and v_own_site and p_until is null then
      -- Less the lookups listed as the tracker row: one tracker, the key's own, whose counts keep the
      -- pairs of its identified visitors and the key's lookups by the hour of the pair's older
      -- last_seen, and by its minute (migration 0042): the whole hours after since's summed, then
      -- the whole minutes of since's hour after since's minute, then the pairs whose older row falls
      -- in since's own minute probed.
      v_minute := date_trunc('minute', p_since, 'UTC') + interval '1 minute';
      v_total := v_total
               - (select coalesce(sum(c.n), 0) from visitor_listing_counts c
                  where c.scope_id = v_sites[1] and c.kind = 'overlap' and c.hour >= v_next)
               - (select coalesce(sum(c.n), 0) from visitor_listing_counts c
                  where c.scope_id = v_sites[1] and c.kind = 'overlap_minute' and c.hour >= v_minute and c.hour < v_next)
               - (select count(*) from api_lookups a
                  where a.api_key_id = p_api_key_id and a.last_seen >= p_since and a.last_seen < v_minute
                    and exists (select 1 from visitors v
                                where v.website_id = v_sites[1] and v.ip = a.ip and v.identification_id is not null and v.last_seen >= p_since))
               - (select count(*) from visitors v
                  where v.website_id = v_sites[1] and v.identification_id is not null and v.last_seen >= p_since and v.last_seen < v_minute
                    -- A lateral probe by the key's address, not a semi-join the generic plan would hash.
                    and (select a.last_seen from api_lookups a where a.api_key_id = p_api_key_id and a.ip = v.ip limit 1) >= v_minute);
    elsif p_trackers and p_api then
      -- Several trackers, one the key does not own (an account's key over another key's tracker: an
      -- address on two of them is one pair per tracker in the counts), or a window with a top: the
      -- lookups of the window are probed.
      v_total := v_total
               - (select count(*) from api_lookups a
                  where a.api_key_id = p_api_key_id and a.last_seen >= p_since and a.last_seen < v_until
                    and exists (select 1 from visitors v
                                where v.website_id = any(v_sites) and v.ip = a.ip and v.identification_id is not null
                                  and v.last_seen >= p_since and v.last_seen < v_until));
    end if;
    if p_trackers and p_watched is false then
      -- Less the window's watched visitors, and the pinned ones below (those both once).
      v_total := v_total
               - (select count(*) from visitors v
                  where v.is_watched and v.identification_id is not null
                    and v.website_id = any(v_sites) and v.last_seen >= p_since and v.last_seen < v_until);
    end if;
    if p_trackers and p_pinned is false then
      v_total := v_total
               - (select count(*) from visitors v
                  where v.is_pinned and v.identification_id is not null
                    and v.website_id = any(v_sites) and v.last_seen >= p_since and v.last_seen < v_until
                    and (p_watched is null or not v.is_watched));
    end if;
    -- The page from the newest rows of each part: each tracker's and the lookups', in the page's order.
    v_page := array(
      select row(m.*)::sl_listed_visitor from (
        select v.website_id, v.ip, v.last_seen, 'tracker'::text, v.identification_id, v.first_seen, v.visit_count, v.pages_viewed,
               v.active_ms, v.high_intent, v.identified_count, v.is_watched, v.is_pinned, v.crm_status
        from unnest(v_sites) s(id)
        cross join lateral (
          select * from visitors v
          where p_trackers and v.website_id = s.id and v.identification_id is not null and v.last_seen >= p_since
            and v.last_seen < v_until and (p_watched is null or not v.is_watched) and (p_pinned is null or not v.is_pinned)
          order by v.last_seen desc, v.ip
          limit v_reach
        ) v
        union all
        select * from (
          select null::uuid, a.ip, a.last_seen, 'api'::text, a.id, null::timestamptz, null::integer, null::integer,
                 null::bigint, null::boolean, null::integer, null::boolean, null::boolean, null::text
          from api_lookups a
          where p_api and a.api_key_id = p_api_key_id and a.last_seen >= p_since and a.last_seen < v_until
            -- Probed row by row as the page reads them (a scalar subquery, never a hashed subplan:
            -- hashing would read every tracker row of the window for a page of a hundred).
            and (p_trackers is not true or (
              select true from visitors v
              where v.website_id = any(v_sites) and v.ip = a.ip and v.identification_id is not null
                and v.last_seen >= p_since and v.last_seen < v_until
              limit 1) is null)
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
          and v.website_id = any(v_sites) and v.identification_id is not null and v.last_seen >= p_since and v.last_seen < v_until
        union all
        select * from visitors v
        where p_trackers and p_address_from is not null and host(v.ip) ~>=~ p_address_from and host(v.ip) ~<~ p_address_to
          and v.website_id = any(v_sites) and v.identification_id is not null and v.last_seen >= p_since and v.last_seen < v_until
          and (v.label_id is null or v.label_id <> all(v_labels))
      ) v
    ), looked_up as (
      select a.ip, a.last_seen, a.id as row_id
      from (
        -- The same two branches over the key's own lookups.
        select * from api_lookups a
        where p_api and p_pattern is not null and a.label_id = any(v_labels) and a.api_key_id = p_api_key_id
          and a.last_seen >= p_since and a.last_seen < v_until
        union all
        select * from api_lookups a
        where p_api and p_address_from is not null and host(a.ip) ~>=~ p_address_from and host(a.ip) ~<~ p_address_to
          and a.api_key_id = p_api_key_id and a.last_seen >= p_since and a.last_seen < v_until and a.label_id <> all(v_labels)
      ) a
    ), matching as (
      select t.website_id, t.ip, t.last_seen, 'tracker'::text as source, t.row_id, t.first_seen, t.visit_count, t.pages_viewed,
             t.active_ms, t.high_intent, t.identified_count, t.is_watched, t.is_pinned, t.crm_status
      from tracked t
      where (p_watched is null or t.is_watched = p_watched) and (p_pinned is null or t.is_pinned = p_pinned)
      union all
      select null::uuid, l.ip, l.last_seen, 'api'::text, l.row_id, null, null, null, null, null, null, null, null, null
      from looked_up l
      where p_watched is not true and p_pinned is not true and not exists (select 1 from tracked t where t.ip = l.ip)
    )
    select (select count(*) from matching),
           array(select row(m.*)::sl_listed_visitor from matching m
                 order by m.last_seen desc, m.ip, m.website_id nulls last
                 limit p_limit offset p_offset)
      into v_total, v_page;
  end if;

  -- The page as JSON text, keys in the contract's order (sl_listed_visitor_row): answered as it is,
  -- not parsed into rows and written out again by the server.
  return query
  select v_total::integer, cardinality(v_page), coalesce(json_agg(r order by p.ordinality), '[]')::text
  from unnest(v_page) with ordinality p
  cross join lateral sl_listed_visitor_row(
    row(p.website_id, p.ip, p.last_seen, p.source, p.row_id, p.first_seen, p.visit_count, p.pages_viewed, p.active_ms,
        p.high_intent, p.identified_count, p.is_watched, p.is_pinned, p.crm_status)::sl_listed_visitor,
    v_all, v_domains) r;
end
$$;
