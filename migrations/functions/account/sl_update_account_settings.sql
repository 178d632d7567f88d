/*
 * api-update-settings in one transaction: each p_set_* says whether the field was given (only given
 * fields change). Rules checked under the account lock, each raising SL<status> and changing nothing:
 *   - a webhook_url needs a secret: the one given now, or the one already stored (SL400);
 *   - a webhook_secret alone needs a webhook_url already set (SL400).
 * Clearing the URL clears the secret. The balance is then judged against the (new) threshold as
 * after any balance change (credits.low, a reload claim). Returns whether a reload was claimed.
 */
-- Account settings accept `auto_reload_enabled: true` before the operator has set up a card and a
-- reload amount (spec: settings take any subset of fields). Enabled-but-not-set-up is a valid state,
-- as on the partner pool: sl_after_balance_change never claims a reload without the set-up, and
-- api-account-status says why nothing refills (`auto_reload.cannot_fire_because`).
create or replace function sl_update_account_settings(
  p_account uuid,
  p_set_url boolean, p_url text,
  p_set_secret boolean, p_secret_sealed text,
  p_set_enabled boolean, p_enabled boolean,
  p_set_threshold boolean, p_threshold integer,
  p_set_domains boolean, p_domains text[],
  p_set_quiet boolean, p_quiet_days integer
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
  update accounts set
    webhook_url = v_url,
    webhook_secret_sealed = v_secret,
    auto_reload_enabled = case when p_set_enabled then p_enabled else auto_reload_enabled end,
    auto_reload_threshold = case when p_set_threshold then p_threshold else auto_reload_threshold end,
    allowed_domains = case when p_set_domains then p_domains else allowed_domains end,
    return_quiet_days = case when p_set_quiet then p_quiet_days else return_quiet_days end
  where id = p_account;
  return sl_after_balance_change(p_account);
end
$$;
