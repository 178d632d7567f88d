-- A bare host as websites.domain spells it (lower case, at least one dot, no scheme, port or path).
create or replace function sl_is_bare_host(p_host text) returns boolean
language sql immutable as $$
  select p_host is not null and length(p_host) <= 253 and p_host = lower(p_host)
    and p_host ~ '^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+([a-z]{2,63}|xn--[a-z0-9-]{1,59})$'
$$;
