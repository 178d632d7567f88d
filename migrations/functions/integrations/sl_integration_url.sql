/*
 * What the outbox shows and caps as an integration's destination: `integration:<kind>:<id>` while
 * it is active, null once paused (its Slack or Teams URL is a credential, sealed, and never
 * written where attempts are logged).
 */
create or replace function sl_integration_url(p_kind text, p_id uuid, p_status text) returns text
language sql immutable as $$
  select case when p_status = 'active' then 'integration:' || p_kind || ':' || p_id::text end
$$;
