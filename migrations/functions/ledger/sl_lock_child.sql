-- Locks a managed child of p_master (subscription row first), or raises 404/403.
create or replace function sl_lock_child(p_master uuid, p_child uuid) returns child_subscriptions
language plpgsql as $$
declare
  s child_subscriptions;
  v_parent uuid;
  v_exists boolean;
begin
  select * into s from child_subscriptions where api_key_id = p_child for update;
  select true, parent_api_key_id into v_exists, v_parent from api_keys where id = p_child;
  if v_exists is null then
    raise exception 'no child with api key id %', p_child using errcode = 'SL404';
  end if;
  if v_parent is null then
    raise exception 'key % is not a managed child', p_child using errcode = 'SL404';
  end if;
  if v_parent <> p_master then
    raise exception 'child % belongs to another partner', p_child using errcode = 'SL403';
  end if;
  if s.id is null then
    raise exception 'child % has no subscription', p_child using errcode = 'SL404';
  end if;
  return s;
end
$$;
