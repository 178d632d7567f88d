/*
 * Adds one statement's changes to list-visitors' counts (migration 0034): a row of
 * visitor_listing_counts per (scope, kind, hour) whose delta is not zero, then folds those keys
 * (sl_fold_listing_counts). The deltas come as arrays at the same positions, so each trigger
 * (sl_count_listed_visitors, sl_count_listed_lookups) hands over its whole statement in one call.
 * PL/pgSQL, so the insert's plan is kept for the session as it was in the triggers.
 */
create or replace function sl_add_listing_counts(p_scopes uuid[], p_kinds text[], p_hours timestamptz[], p_ns integer[])
returns void
language plpgsql as $$
declare
  v_scopes uuid[];
  v_kinds text[];
  v_hours timestamptz[];
begin
  with added as (
    insert into visitor_listing_counts (scope_id, kind, hour, n)
    select d.scope_id, d.kind, d.hour, d.n from unnest(p_scopes, p_kinds, p_hours, p_ns) as d (scope_id, kind, hour, n)
    where d.n <> 0
    returning scope_id, kind, hour
  )
  select array_agg(scope_id), array_agg(kind), array_agg(hour) into v_scopes, v_kinds, v_hours from added;
  if v_scopes is not null then
    perform sl_fold_listing_counts(v_scopes, v_kinds, v_hours);
  end if;
end
$$;
