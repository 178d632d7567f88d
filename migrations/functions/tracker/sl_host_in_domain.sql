/* Whether a host is the domain itself or one of its subdomains (`evilshop.example.com` is neither of `shop.example.com`). */
create or replace function sl_host_in_domain(p_host text, p_domain text) returns boolean
language sql immutable as $$
  select p_host = p_domain or right(p_host, length(p_domain) + 1) = '.' || p_domain
$$;
