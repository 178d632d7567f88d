/*
 * Why a settled verdict is excluded from identification on a website, or null when it is not: a
 * `country` rule naming the verdict's country (ISO 3166-1 alpha-2), else a `domain` rule naming the
 * company's domain or a parent of it. The website's own rules and its account's account-wide ones
 * apply (the account the website's key is in now). p_domain null (no company): only countries.
 * PL/pgSQL: called once per settled identification, its plan kept for the session (README.md).
 */
create or replace function sl_traffic_exclusion(p_website_id uuid, p_country text, p_domain text) returns text
language plpgsql stable as $$
declare
  v_reason text;
begin
  select r.kind into v_reason
  from websites w
  join api_keys k on k.id = w.api_key_id
  join traffic_rules r on r.website_id = w.id or (r.website_id is null and r.account_id = k.account_id)
  where w.id = p_website_id
    and ((r.kind = 'country' and r.value = p_country)
      or (r.kind = 'domain' and p_domain is not null and sl_host_in_domain(lower(p_domain), r.value)))
  order by r.kind = 'country' desc
  limit 1;
  return v_reason;
end
$$;
