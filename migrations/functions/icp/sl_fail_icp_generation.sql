/*
 * A failed generation attempt: retried 1, 5 and 30 minutes later while p_retryable and attempts
 * remain; otherwise the ICP is `failed` with the reason, and the account hears icp.generation_failed.
 */
create or replace function sl_fail_icp_generation(p_id uuid, p_reason text, p_retryable boolean, p_max_attempts integer) returns text
language plpgsql as $$
declare
  v_icp icps;
begin
  select * into v_icp from icps where id = p_id and workflow_status = 'generating' for update;
  if v_icp.id is null then
    return null;
  end if;
  if p_retryable and v_icp.generation_attempts < p_max_attempts then
    update icps set generation_lease_until = null,
      generation_due_at = now() + (array[interval '1 minute', interval '5 minutes', interval '30 minutes'])[least(v_icp.generation_attempts, 3)],
      updated_at = now()
    where id = p_id;
    return 'retrying';
  end if;
  update icps set workflow_status = 'failed', failure_reason = left(p_reason, 1000), generation_due_at = null,
    generation_lease_until = null, updated_at = now()
  where id = p_id;
  perform sl_emit(v_icp.account_id, null, 'icp.generation_failed',
    jsonb_build_object('icp_id', v_icp.id, 'product_id', v_icp.product_id, 'reason', left(p_reason, 1000)), 'account');
  return 'failed';
end
$$;
