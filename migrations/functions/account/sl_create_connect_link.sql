/*
 * Stores a new connect link (only the token's HMAC). Raises SL404 for an unknown account, SL409 when
 * the account has sl_max_open_connect_links() links open.
 */
create or replace function sl_create_connect_link(p_account uuid, p_token_hash text, p_ttl interval)
returns table (link_id uuid, expires_at text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_open integer;
  v_link connect_links;
begin
  perform 1 from accounts where id = p_account for update;
  if not found then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  select count(*) into v_open from connect_links
  where account_id = p_account and used_at is null and expires_at > now();
  if v_open >= sl_max_open_connect_links() then
    raise exception '% connect links are open (unused and unexpired): complete some or let them expire first', v_open
      using errcode = 'SL409';
  end if;
  insert into connect_links (account_id, token_hash, expires_at)
  values (p_account, p_token_hash, now() + p_ttl)
  returning * into v_link;
  return query select v_link.id, sl_iso(v_link.expires_at);
end
$$;
