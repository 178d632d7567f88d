/* The start of the billing period an identification by key p_key falls in: the child's, the
 * partner pool's for a partner's own tracker, else the calendar month (UTC). */
create or replace function sl_identification_period(p_key uuid) returns timestamptz
language sql stable as $$
  select coalesce(
    (select s.current_period_start from child_subscriptions s where s.api_key_id = p_key),
    (select p.current_period_start from api_keys k join pools p on p.account_id = k.account_id
     where k.id = p_key and k.parent_api_key_id is null),
    date_trunc('month', now() at time zone 'UTC') at time zone 'UTC')
$$;
