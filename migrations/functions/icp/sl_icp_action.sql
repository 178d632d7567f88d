/*
 * One review or activation action on an ICP of p_account (the transitions table in decisions.md).
 * An unknown ICP is SL404, another account's SL403, a refused transition SL409 naming the state.
 * Asking for the state the ICP is already in changes nothing and answers it (a retried call is
 * not an error). Activation queues the scoring of the account's identifications.
 */

/*
 * 0015's ICP actions, with regenerate_icp taking an ICP generation from the account's allowance
 * (SL429) once the transition is allowed, the account locked before the ICP (lock order).
 */
create or replace function sl_icp_action(p_account uuid, p_icp uuid, p_action text) returns jsonb
language plpgsql as $$
declare
  v icps;
  w text;
  r text;
begin
  if p_action = 'regenerate_icp' then
    perform 1 from accounts where id = p_account for update;
  end if;
  select * into v from icps where id = p_icp for update;
  if v.id is null then
    raise exception 'no such ICP %', p_icp using errcode = 'SL404';
  elsif v.account_id <> p_account then
    raise exception 'ICP % belongs to another account', p_icp using errcode = 'SL403';
  end if;
  w := v.workflow_status;
  r := v.review_status;
  case p_action
    when 'approve_icp' then
      if r <> 'approved' then
        if w in ('generating', 'failed') then
          raise exception 'cannot approve an ICP that is %: it has nothing to review yet', w using errcode = 'SL409';
        end if;
        r := 'approved';
      end if;
    when 'reject_icp' then
      if r <> 'rejected' then
        if w = 'active' then
          raise exception 'cannot reject an active ICP: pause it first' using errcode = 'SL409';
        elsif w in ('generating', 'failed') then
          raise exception 'cannot reject an ICP that is %: it has nothing to review yet', w using errcode = 'SL409';
        end if;
        r := 'rejected';
      end if;
    when 'activate_icp' then
      if w <> 'active' then
        if w not in ('generated', 'paused') then
          raise exception 'cannot activate an ICP that is %', w using errcode = 'SL409';
        elsif r <> 'approved' then
          raise exception 'cannot activate an ICP whose review is %: approve it first', r using errcode = 'SL409';
        end if;
        w := 'active';
      end if;
    when 'pause_icp' then
      if w <> 'paused' then
        if w <> 'active' then
          raise exception 'cannot pause an ICP that is %: only an active ICP can be paused', w using errcode = 'SL409';
        end if;
        w := 'paused';
      end if;
    when 'regenerate_icp' then
      if w not in ('failed', 'generated') or (w = 'generated' and r = 'approved') then
        raise exception 'cannot regenerate an ICP that is % and %: only a failed or an unapproved generated ICP can be', w, r
          using errcode = 'SL409';
      end if;
      perform sl_take_icp_generation(p_account);
      w := 'generating';
      r := 'pending_review';
    else
      raise exception 'unknown ICP action %', p_action using errcode = 'SL400';
  end case;
  if w is distinct from v.workflow_status or r is distinct from v.review_status then
    update icps set
      workflow_status = w, review_status = r, updated_at = now(),
      failure_reason = case when w = 'generating' then null else failure_reason end,
      generation_attempts = case when w = 'generating' then 0 else generation_attempts end,
      generation_due_at = case when w = 'generating' then now() else null end,
      generation_lease_until = null,
      -- Becoming active scores everything identified so far; the worker walks it in id order.
      backfill_pending = (w = 'active' and v.workflow_status <> 'active') or (w = 'active' and backfill_pending),
      backfill_after = case when w = 'active' and v.workflow_status <> 'active' then null else backfill_after end
    where id = p_icp
    returning * into v;
  end if;
  return sl_icp_json(v);
end
$$;
