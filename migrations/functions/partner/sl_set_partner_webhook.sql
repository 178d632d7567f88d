/*
 * partner-set-webhook. p_url_action keep | set | clear; p_secret_action replace | keep_or_mint.
 * Returns whether the candidate secret was stored.
 */
create or replace function sl_set_partner_webhook(p_account uuid, p_url_action text, p_url text, p_secret_action text, p_secret_sealed text)
returns table (webhook_url text, secret_replaced boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  a accounts;
  v_url text;
  v_secret text;
  v_replaced boolean := false;
begin
  select * into a from accounts where id = p_account for update;
  v_url := a.partner_webhook_url;
  v_secret := a.partner_webhook_secret_sealed;
  if p_url_action = 'clear' then
    v_url := null;
    v_secret := null;
  else
    if p_url_action = 'set' then
      v_url := p_url;
    end if;
    if v_url is null then
      raise exception 'url is required: no partner webhook is configured yet' using errcode = 'SL400';
    end if;
    if p_secret_action = 'replace' or v_secret is null then
      v_secret := p_secret_sealed;
      v_replaced := true;
    end if;
  end if;
  update accounts set partner_webhook_url = v_url, partner_webhook_secret_sealed = v_secret where id = p_account;
  return query select v_url, v_replaced;
end
$$;
