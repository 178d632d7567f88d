/*
 * Folds the counts of visitor_listing_counts (migration 0034) kept for some of the given (scope,
 * kind, hour) keys into one row each: the rows other transactions committed and this one's own. A
 * row another transaction is folding or has not committed is left for a later fold (SKIP LOCKED), so
 * writers never wait for each other here; a key is read as the sum of its rows whether folded or not.
 *
 * Folded: the keys of the last two hours, where every statement adds its visitors seen now, and one
 * in four of the others, picked at random, so an older hour (which gains a row when one of its
 * visitors returns) holds about four rows. Folding every key on every statement deleted and wrote
 * again as many rows as the statement added; checking each key's rows first cost as much.
 */
create or replace function sl_fold_listing_counts(p_scopes uuid[], p_kinds text[], p_hours timestamptz[])
returns void
language sql as $$
  with k as (
    select distinct t.scope_id, t.kind, t.hour from unnest(p_scopes, p_kinds, p_hours) as t (scope_id, kind, hour)
  ), crowded as (
    select k.* from k where k.hour >= now() - interval '2 hours' or random() < 0.25
  ), claimed as (
    select c.id from visitor_listing_counts c join crowded k on k.scope_id = c.scope_id and k.kind = c.kind and k.hour = c.hour
    for update of c skip locked
  ), gone as (
    delete from visitor_listing_counts c using claimed x where c.id = x.id
    returning c.scope_id, c.kind, c.hour, c.n
  )
  insert into visitor_listing_counts (scope_id, kind, hour, n)
  select g.scope_id, g.kind, g.hour, sum(g.n) from gone g group by 1, 2, 3 having sum(g.n) <> 0
$$;
