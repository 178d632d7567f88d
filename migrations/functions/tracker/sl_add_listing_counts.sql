/*
 * Adds one statement's changes to list-visitors' counts (migration 0034): a row of
 * visitor_listing_counts per (scope, kind, hour) whose delta is not zero, then folds those keys
 * (sl_fold_listing_counts). The deltas come as arrays at the same positions, so each trigger
 * (sl_count_listed_visitors, sl_count_listed_lookups) hands over its whole statement in one call:
 * its rows' counts already by hour (p_scopes … p_ns), and the pairs of a tracker row and a lookup
 * it changed (p_pair_sites … p_pair_ns: the website, the older last_seen of the two, +1 or -1),
 * which are counted here by the hour (`overlap`) and by the minute (`overlap_minute`, migration 0042).
 * PL/pgSQL, so the insert's plan is kept for the session as it was in the triggers.
 */
create or replace function sl_add_listing_counts(p_scopes uuid[], p_kinds text[], p_hours timestamptz[], p_ns integer[],
                                                 p_pair_sites uuid[], p_pair_older timestamptz[], p_pair_ns integer[])
returns void
language plpgsql as $$
declare
  v_scopes uuid[];
  v_kinds text[];
  v_hours timestamptz[];
begin
  with deltas as (
    select d.scope_id, d.kind, d.hour, d.n from unnest(p_scopes, p_kinds, p_hours, p_ns) as d (scope_id, kind, hour, n)
    union all
    select p.scope_id, b.kind, date_trunc(b.unit, p.older, 'UTC'), sum(p.n)::integer
    from unnest(p_pair_sites, p_pair_older, p_pair_ns) as p (scope_id, older, n)
    cross join (values ('overlap', 'hour'), ('overlap_minute', 'minute')) as b (kind, unit)
    group by 1, 2, 3
  ), added as (
    insert into visitor_listing_counts (scope_id, kind, hour, n)
    select d.scope_id, d.kind, d.hour, d.n from deltas d where d.n <> 0
    returning scope_id, kind, hour
  )
  select array_agg(scope_id), array_agg(kind), array_agg(hour) into v_scopes, v_kinds, v_hours from added;
  if v_scopes is not null then
    perform sl_fold_listing_counts(v_scopes, v_kinds, v_hours);
  end if;
end
$$;
