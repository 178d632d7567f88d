/*
 * Whether a tracker with domain p_domain, of an account with p_allowed (empty: none set), takes a page on p_host.
 * PL/pgSQL: a `language sql` body with a subquery is never inlined, and Postgres 15 then plans it
 * afresh in every statement that calls it (about 0.3 ms, each time collect appends a batch); a
 * PL/pgSQL plan is kept for the session.
 */
create or replace function sl_tracker_accepts_host(p_host text, p_domain text, p_allowed text[]) returns boolean
language plpgsql immutable as $$
begin
  if cardinality(p_allowed) = 0 then
    return sl_host_in_domain(p_host, p_domain);
  end if;
  return exists (select 1 from unnest(p_allowed) x where sl_host_in_domain(p_host, x));
end
$$;
