-- Issue 13, the account endpoints and connect links: creating a link, api-update-settings as one
-- transaction, and collect honouring the account's allowed_domains.
--
-- Lock order, as in 0014: the accounts row first. Creating a link, completing one and changing
-- settings each lock it, so they serialise per account with debits and reloads.

/*
 * How many connect links an account may have open (unused and unexpired) at once: an account key
 * cannot fill the table with links nobody completes. Complete or let some expire first.
 */
create function sl_max_open_connect_links() returns integer
language sql immutable as $$ select 100 $$;

/*
 * Stores a new connect link (only the token's HMAC). Raises SL404 for an unknown account, SL409 when
 * the account has sl_max_open_connect_links() links open.
 */
create function sl_create_connect_link(p_account uuid, p_token_hash text, p_ttl interval)
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

/*
 * api-update-settings in one transaction: each p_set_* says whether the field was given (only given
 * fields change). Rules checked under the account lock, each raising SL<status> and changing nothing:
 *   - a webhook_url needs a secret: the one given now, or the one already stored (SL400);
 *   - a webhook_secret alone needs a webhook_url already set (SL400);
 *   - enabling auto-reload needs the operator's reload amount, credit price and card (SL409).
 * Clearing the URL clears the secret. The balance is then judged against the (new) threshold as
 * after any balance change (credits.low, a reload claim). Returns whether a reload was claimed.
 */
create function sl_update_account_settings(
  p_account uuid,
  p_set_url boolean, p_url text,
  p_set_secret boolean, p_secret_sealed text,
  p_set_enabled boolean, p_enabled boolean,
  p_set_threshold boolean, p_threshold integer,
  p_set_domains boolean, p_domains text[]
) returns boolean
language plpgsql as $$
declare
  v_acct accounts;
  v_url text;
  v_secret text;
begin
  select * into v_acct from accounts where id = p_account for update;
  if v_acct.id is null then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  v_url := case when p_set_url then p_url else v_acct.webhook_url end;
  v_secret := case when p_set_secret then p_secret_sealed else v_acct.webhook_secret_sealed end;
  if v_url is null then
    if p_set_secret and p_secret_sealed is not null then
      raise exception 'webhook_secret needs a webhook_url: none is set, so give webhook_url in the same request'
        using errcode = 'SL400';
    end if;
    v_secret := null;
  elsif v_secret is null then
    raise exception 'webhook_url needs a webhook_secret (at least 8 characters): none is stored, so give one in the same request'
      using errcode = 'SL400';
  end if;
  if p_set_enabled and p_enabled and not v_acct.auto_reload_enabled
     and (v_acct.auto_reload_amount is null or v_acct.payment_method_id is null or v_acct.credit_price_pence is null) then
    raise exception 'auto-reload needs a payment method and a reload amount, which the operator sets up: ask them first'
      using errcode = 'SL409';
  end if;
  update accounts set
    webhook_url = v_url,
    webhook_secret_sealed = v_secret,
    auto_reload_enabled = case when p_set_enabled then p_enabled else auto_reload_enabled end,
    auto_reload_threshold = case when p_set_threshold then p_threshold else auto_reload_threshold end,
    allowed_domains = case when p_set_domains then p_domains else allowed_domains end
  where id = p_account;
  return sl_after_balance_change(p_account);
end
$$;

/*
 * 0012's collect, with the account's allowed_domains: empty, a page must be on the website's domain
 * or a subdomain (as before); non-empty, the list replaces that rule, and a page must be on one of
 * the listed hosts or a subdomain of one. The same statement reads the key's account row by its
 * primary key: one more index probe, no further round trip.
 */
create or replace function sl_collect_event(
  p_tracking_script_id uuid, p_kind text, p_page_host text, p_ip inet, p_is_bot boolean, p_session_id text,
  p_url text, p_referrer text, p_active_ms integer, p_beacon_id text, p_user_agent text
) returns boolean
language plpgsql as $$
declare
  v_site record;
begin
  select w.id, w.api_key_id into v_site
  from websites w
  join api_keys k on k.id = w.api_key_id
  join accounts a on a.id = k.account_id
  where w.tracking_script_id = p_tracking_script_id and w.status = 'active' and k.status <> 'revoked'
    and case when cardinality(a.allowed_domains) = 0 then sl_host_in_domain(p_page_host, w.domain)
             else exists (select 1 from unnest(a.allowed_domains) d where sl_host_in_domain(p_page_host, d)) end;
  if v_site.id is null then
    return false;
  end if;
  insert into tracker_events (website_id, api_key_id, kind, ip, is_bot, session_id, url, referrer, active_ms, beacon_id,
                              user_agent, identify_status)
  values (v_site.id, v_site.api_key_id, p_kind, p_ip, p_is_bot, p_session_id, p_url, p_referrer, p_active_ms, p_beacon_id,
          p_user_agent, case when p_is_bot then 'skipped' else 'pending' end)
  on conflict (website_id, session_id, beacon_id) where beacon_id is not null do nothing;
  return found;
end
$$;
