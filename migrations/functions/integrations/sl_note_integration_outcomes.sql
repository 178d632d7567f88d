/*
 * What an integration learns from its deliveries' recorded attempts (sl_record_deliveries), given
 * as a JSON array of {integration_id, succeeded, delivery_status, error, external_id, body} in
 * integration order (the order rows are locked in):
 * - a success clears its failures in a row; a failure adds one, and at 10 in a row, or at a
 *   delivery that failed for good (an answer retrying cannot change: a revoked token, an archived
 *   channel), the integration is paused: its pending deliveries settle as failed (replayable once it
 *   is resumed), no signal writes new ones, and the account is told (`integration.paused`, on the
 *   account's webhook, or the child's for a partner's child);
 * - a CRM push marks its visitor: `pushed` with the CRM's id, or `failed` once the delivery failed.
 */
create or replace function sl_note_integration_outcomes(p_outcomes jsonb) returns void
language plpgsql as $$
declare
  o jsonb;
  g integrations;
  v_pause text;
  v_owner accounts;
  v_key uuid;
  v_visitor jsonb;
begin
  for o in select x from jsonb_array_elements(p_outcomes) x loop
    select * into g from integrations where id = (o->>'integration_id')::uuid for update;
    continue when g.id is null;
    v_pause := null;
    if (o->>'succeeded')::boolean then
      update integrations set failures_in_row = 0 where id = g.id and failures_in_row <> 0;
    else
      update integrations set failures_in_row = failures_in_row + 1 where id = g.id returning * into g;
      if g.status = 'active' and (o->>'delivery_status' = 'failed' or g.failures_in_row >= 10) then
        v_pause := left(format('%s after %s failed attempts in a row; last: %s', g.kind, g.failures_in_row, coalesce(o->>'error', 'unknown')), 500);
      end if;
    end if;
    if v_pause is not null then
      update integrations set status = 'paused', paused_reason = v_pause where id = g.id;
      update events set delivery_status = 'failed', next_attempt_at = null, last_error = 'integration paused'
      where integration_id = g.id and delivery_status = 'pending' and lease_owner is null;
      select * into v_owner from accounts where id = g.account_id;
      select k.id into v_key from api_keys k where k.account_id = g.account_id order by k.created_at limit 1;
      perform sl_emit(
        coalesce(sl_events_owner(v_key), g.account_id), v_key, 'integration.paused',
        jsonb_build_object('integration_id', g.id, 'kind', g.kind, 'name', g.name, 'reason', v_pause),
        case when v_owner.is_phantom then 'child' else 'account' end);
    end if;
    v_visitor := o->'body'->'data'->'visitor';
    if g.kind in ('hubspot', 'pipedrive') and v_visitor is not null
       and ((o->>'succeeded')::boolean or o->>'delivery_status' = 'failed') then
      update visitors v set
        crm_status = case when (o->>'succeeded')::boolean then 'pushed' else 'failed' end,
        crm_id = case when (o->>'succeeded')::boolean then left(o->>'external_id', 200) else v.crm_id end,
        crm_pushed_at = case when (o->>'succeeded')::boolean then now() else v.crm_pushed_at end
      where v.website_id = (v_visitor->>'website_id')::uuid and v.ip = (v_visitor->>'ip')::inet;
    end if;
  end loop;
end
$$;
