/*
 * An account's new integration (create-integration). The account's row is locked first, so two
 * creations count each other against the cap of 20 per account. p_website, when given, must be a
 * website the calling key may see (its own, or any of the account's for an account-scope key); a
 * key scoped to its own websites must name one (sl_key_integrations).
 */
create or replace function sl_create_integration(
  p_key uuid, p_website uuid, p_kind text, p_name text, p_secret_sealed text, p_signals text[], p_cooldown_seconds integer, p_digest boolean
) returns setof integrations
language plpgsql as $$
declare
  v_account uuid;
begin
  select account_id into v_account from api_keys where id = p_key;
  perform 1 from accounts where id = v_account for update;
  if p_website is not null and not exists (
    select 1 from websites w join api_keys k on k.id = w.api_key_id join api_keys me on me.id = p_key
    where w.id = p_website and k.account_id = v_account and (me.scope = 'account' or w.api_key_id = me.id)
  ) then
    raise exception 'no website % among this key''s trackers', p_website using errcode = 'SL404';
  end if;
  if p_website is null and (select scope from api_keys where id = p_key) <> 'account' then
    raise exception 'this key is scoped to its own websites and cannot act on the account: name one of its websites' using errcode = 'SL403';
  end if;
  if (select count(*) from integrations where account_id = v_account) >= 20 then
    raise exception 'an account has at most 20 integrations: delete one first' using errcode = 'SL409';
  end if;
  return query
  insert into integrations (account_id, website_id, kind, name, secret_sealed, signals, cooldown_seconds, digest)
  values (v_account, p_website, p_kind, p_name, p_secret_sealed, p_signals, p_cooldown_seconds, p_digest)
  returning *;
end
$$;
