/*
 * One page of identification-list (packages/core/src/tracker/list-identifications.ts has the
 * contract): website p_website_id's identifications, newest first, as one JSON array (page_json,
 * text) in Identification's shape, keys in its order. No row when key p_api_key_id of account
 * p_account_id cannot read the website: another account's, or, for a key scoped to its own
 * websites (a released child's), one it does not own. Such a key sees no ICP scores and nothing
 * qualified: the ICPs are the account's, not the key holder's.
 *
 * One statement for the caller (a page cost five round trips: the website's check, then a
 * transaction to set the plan mode around the page), so a listing waits on Postgres once. Inside,
 * the page's identifications are found first, in list order, so that the rows the filters or the
 * offset skip are never fetched, and the JSON is built for the page's rows alone.
 *
 * Plans: the qualified page without filters (the list a sales team works from) and the JSON are
 * planned once per connection (force_generic_plan): each reads an index in list order or by key,
 * so its generic plan is its custom one, and planning per call was a third of a page's time. jit
 * off: a generic plan's estimates (the whole website, not a page) would compile it on every call, a
 * hundred times what the page costs. Every other page is dynamic SQL, planned per call with its
 * values (a generic plan of a rare filter scanned six times longer).
 */
create or replace function sl_list_identifications(
  p_api_key_id uuid, p_account_id uuid, p_website_id uuid, p_qualified boolean, p_status text, p_type text,
  p_limit integer, p_offset integer)
returns table (page_json text)
language plpgsql stable
set plan_cache_mode = force_generic_plan
set jit = off
as $$
declare
  v_site uuid;
  -- The account's active ICPs, read once (not once per identification); none for a key scoped to
  -- its websites.
  v_icps uuid[];
  v_page uuid[];
begin
  select w.id,
         case when me.scope = 'account'
              then array(select p.id from icps p where p.account_id = k.account_id and p.workflow_status = 'active' order by p.id)
              else '{}' end
    into v_site, v_icps
  from websites w join api_keys k on k.id = w.api_key_id join api_keys me on me.id = p_api_key_id
  where w.id = p_website_id and k.account_id = p_account_id
    and (me.scope = 'account' or w.api_key_id = me.id);
  if v_site is null then
    return;
  end if;

  if p_qualified is true and p_status is null and p_type is null then
    -- The qualified page (a sales team's list): some active ICP of the account qualifies it (a
    -- paused ICP's scores do not count), read in list order from the website's qualifying scores
    -- alone (migration 0041); an identification two ICPs qualify is met twice in a row there, and
    -- counted once.
    select coalesce(array_agg(q.identification_id order by q.listed_at desc, q.identification_id), '{}') into v_page
    from (
      select distinct s.listed_at, s.identification_id from icp_scores s
      where s.website_id = v_site and s.qualified and s.icp_id = any(v_icps)
      order by s.listed_at desc, s.identification_id
      limit p_limit offset p_offset
    ) q;
  else
    -- Every other page, planned per call: whether a status or type filter is cheaper to read by
    -- its index or to check row by row depends on how many rows it keeps. The branch is chosen by
    -- one-time filters on $4 (qualified). Not qualified: from the index of the website's
    -- identifications alone (migration 0034), each probed, for qualified=false, in the index of
    -- qualifying scores (a scalar subquery: as an anti-join the planner hashed every qualified
    -- score of the account first). Qualified with a filter: the qualifying scores as above, each
    -- identification checked against the filters.
    execute $q$
      select coalesce(array_agg(p.id order by p.created_at desc, p.id), '{}') from (
        (
          select i.id, i.created_at from identifications i
          where $4 is not true
            and i.website_id = $1
            and ($2::text is null or i.status = $2)
            and ($3::text is null or i.identification_type = $3)
            and ($4 is null or (
              select true from icp_scores s
              where s.identification_id = i.id and s.qualified and s.icp_id = any($5)
              limit 1) is null)
          order by i.created_at desc, i.id
          limit $6 offset $7
        )
        union all
        (
          select q.identification_id, q.listed_at from (
            select distinct s.listed_at, s.identification_id from icp_scores s
            where $4 is true and s.website_id = $1 and s.qualified and s.icp_id = any($5)
            order by s.listed_at desc, s.identification_id
          ) q
          where exists (
            select 1 from identifications i
            where i.id = q.identification_id
              and ($2::text is null or i.status = $2)
              and ($3::text is null or i.identification_type = $3))
          order by q.listed_at desc, q.identification_id
          limit $6 offset $7
        )
      ) p$q$
      into v_page
      using v_site, p_status, p_type, p_qualified, v_icps, p_limit, p_offset;
  end if;

  return query
  select coalesce(json_agg(json_build_object(
    'id', i.id, 'identification_type', i.identification_type, 'status', i.status, 'identified_at', sl_iso(i.identified_at),
    'individual', case when i.identification_type = 'individual' then json_build_object(
      'linkedin_url', i.person_linkedin_url, 'linkedin_name', i.person_linkedin_name,
      'linkedin_title', i.person_linkedin_title, 'linkedin_company', i.person_linkedin_company) end,
    'company', case when i.status = 'identified' then json_build_object(
      'name', i.company_name, 'domain', i.domain, 'industry', i.industry, 'employee_count', i.employee_range,
      'location', coalesce(i.location, nullif(i.country, '')), 'linkedin_url', i.company_linkedin_url) end,
    'icp_scores', coalesce((
      select json_agg(json_build_object('icp_id', p.id, 'icp_name', p.name, 'score', s.score, 'qualified', s.qualified,
                                        'ai_summary', s.ai_summary) order by s.score desc, p.created_at, p.id)
      from icp_scores s join icps p on p.id = s.icp_id
      where s.identification_id = i.id and s.icp_id = any(v_icps)
    ), '[]'::json),
    'session', json_build_object(
      'pages_visited', coalesce(v.pages_viewed, 0), 'duration_seconds', coalesce(v.active_ms / 1000, 0),
      'referrer', coalesce(v.referrer, '')))
    order by page.n), '[]'::json)::text
  from unnest(v_page) with ordinality as page (id, n)
  join identifications i on i.id = page.id
  left join visitors v on v.website_id = i.website_id and v.ip = i.ip;
end;
$$;
