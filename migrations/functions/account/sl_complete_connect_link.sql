/*
 * Completes a connect link: records (or reconnects a disconnected) user and spends the link, in one
 * transaction, and the account hears of it: `user.connected` to the account webhook, with the user's
 * id (which the account needs for x-user-id) and profile. Raises SL404 for an unknown token,
 * SL410 for a used or expired one, SL409 for a profile connected to the account now (the link stays
 * unused).
 */
create or replace function sl_complete_connect_link(p_token_hash text, p_name text, p_linkedin_url text, p_title text, p_company text)
returns table (user_id uuid, account_id uuid, reconnected boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  v_link connect_links;
  v_user uuid;
  v_existed boolean;
begin
  -- The file's lock order: the account first, then the link (found unlocked, then locked and re-read).
  select * into v_link from connect_links where token_hash = p_token_hash;
  if v_link.id is null then
    raise exception 'no such connect link' using errcode = 'SL404';
  end if;
  perform 1 from accounts where id = v_link.account_id for update;
  select * into v_link from connect_links where id = v_link.id for update;
  if v_link.id is null then
    raise exception 'no such connect link' using errcode = 'SL404';
  end if;
  if v_link.used_at is not null then
    raise exception 'this connect link has already been used' using errcode = 'SL410';
  end if;
  if v_link.expires_at <= now() then
    raise exception 'this connect link expired at %', sl_iso(v_link.expires_at) using errcode = 'SL410';
  end if;
  select id into v_user from connected_users where account_id = v_link.account_id and linkedin_url = p_linkedin_url;
  v_existed := v_user is not null;
  -- Nobody proves they own a profile, so a link cannot take over a user who is connected now (their
  -- name, title and company are the sender of messages): only a disconnected one is reconnected.
  if exists (select 1 from connected_users where id = v_user and status = 'connected') then
    raise exception 'this profile is already connected to the account' using errcode = 'SL409';
  end if;
  insert into connected_users (account_id, name, linkedin_url, title, company)
  values (v_link.account_id, p_name, p_linkedin_url, p_title, p_company)
  on conflict (account_id, linkedin_url) do update
    set name = excluded.name, title = excluded.title, company = excluded.company, status = 'connected', connected_at = now()
  returning id into v_user;
  update connect_links set used_at = now(), user_id = v_user where id = v_link.id;
  perform sl_count_usage(v_link.account_id, 'connect', 1);
  perform sl_emit(v_link.account_id, null, 'user.connected', jsonb_build_object(
    'user_id', v_user, 'link_id', v_link.id, 'name', p_name, 'linkedin_url', p_linkedin_url,
    'title', p_title, 'company', p_company, 'reconnected', v_existed), 'account');
  return query select v_user, v_link.account_id, v_existed;
end
$$;
