/*
 * partner-rotate-child-key: replaces the key hash; the record id and every reference stay. At most
 * p_limit rotations per child per rolling 24 hours (counted under the key's row lock).
 */
create or replace function sl_rotate_child_key(p_master uuid, p_child uuid, p_hash text, p_prefix text, p_limit integer)
returns table (old_key_prefix text, rotated_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
declare
  k api_keys;
  v_recent integer;
  v_at timestamptz := now();
begin
  select * into k from api_keys where api_keys.id = p_child for update;
  if k.id is null then
    raise exception 'no child with api key id %', p_child using errcode = 'SL404';
  end if;
  if k.parent_api_key_id is null then
    raise exception 'key % is not a managed child', p_child using errcode = 'SL404';
  end if;
  if k.parent_api_key_id <> p_master then
    raise exception 'child % belongs to another partner', p_child using errcode = 'SL403';
  end if;
  select count(*)::int into v_recent from key_rotations r
  where r.api_key_id = p_child and r.rotated_at > v_at - interval '24 hours';
  if v_recent >= p_limit then
    raise exception 'child % was rotated % times in the last 24 hours; the limit is %', p_child, v_recent, p_limit
      using errcode = 'SL429', detail = jsonb_build_object('recent_rotations_24h', v_recent)::text;
  end if;
  update api_keys set key_hash = p_hash, key_prefix = p_prefix, rotated_at = v_at where api_keys.id = p_child;
  insert into key_rotations (api_key_id, old_key_prefix, rotated_at) values (p_child, k.key_prefix, v_at);
  return query select k.key_prefix, v_at;
end
$$;
