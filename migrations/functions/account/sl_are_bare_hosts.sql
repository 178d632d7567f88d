-- Whether every entry of p_hosts is a bare host (sl_is_bare_host); an empty list is. The CHECK on
-- accounts.allowed_domains calls it, so it is applied before migration 0014 and never dropped.
create or replace function sl_are_bare_hosts(p_hosts text[]) returns boolean
language sql immutable as $$
  select coalesce(bool_and(sl_is_bare_host(h)), true) from unnest(p_hosts) h
$$;
