/*
 * Removes a traffic rule of p_key's account and answers it. A rule of another account, or, for a key
 * scoped to its own websites, of a website it does not own, is SL404 as one that does not exist; an
 * account-wide rule is SL403 to such a key (it reads its websites' rules only, and cannot act on the
 * account). The next beacon the worker takes is judged without it; an identification it excluded
 * is queued again by the next beacon of its address (sl_apply_tracker_events).
 */
create or replace function sl_delete_traffic_rule(p_key uuid, p_rule uuid)
returns table (id uuid, website_id uuid, kind text, value text, created_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
declare
  v_rule traffic_rules;
  v_me api_keys;
begin
  select * into v_me from api_keys k where k.id = p_key;
  select * into v_rule from traffic_rules r where r.id = p_rule and r.account_id = v_me.account_id for update;
  if v_rule.id is null or (v_rule.website_id is not null and v_me.scope <> 'account'
      and not exists (select 1 from websites w where w.id = v_rule.website_id and w.api_key_id = v_me.id)) then
    raise exception 'no such traffic rule for this key' using errcode = 'SL404';
  end if;
  if v_rule.website_id is null and v_me.scope <> 'account' then
    raise exception 'the rule is account-wide: a key scoped to its own websites cannot remove it' using errcode = 'SL403';
  end if;
  delete from traffic_rules r where r.id = p_rule;
  return query select v_rule.id, v_rule.website_id, v_rule.kind, v_rule.value, v_rule.created_at;
end
$$;
