/* The referrer, unless it is the website itself (its domain or a subdomain) or not a URL. */
create or replace function sl_external_referrer(p_referrer text, p_domain text) returns text
language sql immutable as $$
  select case when host is null or sl_host_in_domain(host, p_domain) then null else p_referrer end
  from (select lower(substring(p_referrer from '^[a-zA-Z][a-zA-Z0-9+.-]*://([^/?#:@]+)')) as host) referrer
$$;
