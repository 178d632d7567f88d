/*
 * The integrations a key may see and manage: all of its account's for a key that acts on the
 * account; for a key scoped to its own websites (a partner's released child), only those bound to
 * one of its websites, never an account-wide one.
 */
create or replace function sl_key_integrations(p_key uuid) returns setof uuid
language sql stable as $$
  select g.id from integrations g join api_keys me on me.id = p_key
  where g.account_id = me.account_id
    and (me.scope = 'account' or g.website_id in (select w.id from websites w where w.api_key_id = me.id))
$$;
