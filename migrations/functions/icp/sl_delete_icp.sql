-- Deletes an ICP of p_account (its scores go with it); frees a place under the plan limit.
create or replace function sl_delete_icp(p_account uuid, p_icp uuid) returns uuid
language plpgsql as $$
declare
  v_owner uuid;
begin
  select account_id into v_owner from icps where id = p_icp for update;
  if v_owner is null then
    raise exception 'no such ICP %', p_icp using errcode = 'SL404';
  elsif v_owner <> p_account then
    raise exception 'ICP % belongs to another account', p_icp using errcode = 'SL403';
  end if;
  delete from icps where id = p_icp;
  return p_icp;
end
$$;
