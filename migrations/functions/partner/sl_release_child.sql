/*
 * partner-release-child: the key returns to the partner's direct account, its subscription and
 * phantom user are deleted and its remaining top-up goes to the pool (lost when there is no pool).
 */

/*
 * partner-release-child: the key returns to the partner's direct account, its subscription and
 * phantom user are deleted and its remaining top-up goes to the pool (lost when there is no pool).
 * As 0002, and the key is scoped to its own websites in the same statement that moves it into the
 * partner's account: from the commit on it is a tracker of the partner, not a key to the account.
 */
create or replace function sl_release_child(p_master uuid, p_child uuid)
returns table (topup_returned integer)
language plpgsql as $$
#variable_conflict use_column
declare
  s child_subscriptions;
  v_partner uuid := sl_partner_of(p_master);
  v_phantom uuid;
begin
  s := sl_lock_child(p_master, p_child);
  select account_id into v_phantom from api_keys where id = p_child for update;
  update pools set topup_balance = topup_balance + s.topup_balance where account_id = v_partner;
  update api_keys set
    account_id = v_partner,
    parent_api_key_id = null,
    scope = 'websites',
    -- It keeps tracking as a direct tracker of the partner, unless it was revoked.
    status = case when status = 'revoked' then 'revoked' else 'active' end,
    suspended_reason = null
  where id = p_child;
  delete from child_subscriptions where id = s.id;
  delete from accounts a where a.id = v_phantom and a.is_phantom
    and not exists (select 1 from api_keys where account_id = v_phantom);
  perform sl_emit(v_partner, p_child, 'child.released', jsonb_build_object(
    'child_api_key_id', p_child,
    'topup_returned', s.topup_balance));
  return query select s.topup_balance;
end
$$;
