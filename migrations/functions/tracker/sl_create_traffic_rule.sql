/*
 * Adds a traffic rule for p_key: for one of its websites (p_website; a key scoped to its own
 * websites may name only those it owns, a website of another account is SL404 as one that does not
 * exist), or, p_website null, for its whole account (the verb lets only a key that acts on the
 * account ask). p_value is normalised by the verb; a `cidr` value is made canonical here (its
 * network: 10.0.0.1/8 is 10.0.0.0/8, an address alone is its /32 or /128).
 *
 * The same rule again is answered with the one there is (`created` false) and adds nothing. An
 * account has at most p_max rules (account-wide and per website together): one more is SL409. The
 * account's row is locked first (the lock order of accounts, README.md), so two requests cannot
 * both take the last place.
 */
create or replace function sl_create_traffic_rule(p_key uuid, p_website uuid, p_kind text, p_value text, p_max integer)
returns table (id uuid, website_id uuid, kind text, value text, created_at timestamptz, created boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  v_account uuid;
  v_value text := case when p_kind = 'cidr' then network(p_value::inet)::text else p_value end;
  v_rule traffic_rules;
begin
  select k.account_id into v_account from api_keys k where k.id = p_key;
  if p_website is not null then
    select k.account_id into v_account
    from websites w join api_keys k on k.id = w.api_key_id join api_keys me on me.id = p_key
    where w.id = p_website and k.account_id = me.account_id and (me.scope = 'account' or w.api_key_id = me.id);
    if v_account is null then
      raise exception 'no such website for this key' using errcode = 'SL404';
    end if;
  end if;
  perform 1 from accounts a where a.id = v_account for update;
  select * into v_rule from traffic_rules r
  where r.account_id = v_account and r.website_id is not distinct from p_website and r.kind = p_kind and r.value = v_value;
  if v_rule.id is not null then
    return query select v_rule.id, v_rule.website_id, v_rule.kind, v_rule.value, v_rule.created_at, false;
    return;
  end if;
  if (select count(*) from traffic_rules r where r.account_id = v_account) >= p_max then
    raise exception 'the account has % traffic rules, the most it may have: remove one first', p_max using errcode = 'SL409';
  end if;
  insert into traffic_rules (account_id, website_id, kind, value) values (v_account, p_website, p_kind, v_value)
  returning * into v_rule;
  return query select v_rule.id, v_rule.website_id, v_rule.kind, v_rule.value, v_rule.created_at, true;
end
$$;
