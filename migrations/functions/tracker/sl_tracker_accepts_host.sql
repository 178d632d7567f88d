/* Whether a tracker with domain p_domain, of an account with p_allowed (empty: none set), takes a page on p_host. */
create or replace function sl_tracker_accepts_host(p_host text, p_domain text, p_allowed text[]) returns boolean
language sql immutable as $$
  select case when cardinality(p_allowed) = 0 then sl_host_in_domain(p_host, p_domain)
              else exists (select 1 from unnest(p_allowed) x where sl_host_in_domain(p_host, x)) end
$$;
