/*
 * Settles one identification whose rows the caller has locked in the lock order
 * (sl_settle_identifications: its visitors, then it). p_result is the verdict as identification
 * columns (status `identified` or `failed`). p_excluded: the kind of the traffic rule that excludes
 * it, or null (the caller asked sl_traffic_exclusion). p_paid_by: not null when the caller has
 * already taken this identification's ID (sl_consume_ids, for a batch), the partner it was taken
 * for; null, and the ID is taken here.
 *
 * One a traffic rule of its website excludes (its country, or its company's domain) is stored as excluded, with the verdict's traffic type, country, domain and
 * company and the rule's kind, and uses nothing: the ledger is never reached, no event is written,
 * and no visitor points at it. A failed one (no business behind the address) uses nothing. An
 * identified one uses one ID
 * (sl_consume_id): consumed (or an account the ledger does not meter) → recorded (the caller then
 * makes it the current identification of every visitor of its unit on the website, in one statement
 * for its batch), its `visitor_identified` signal written for the account's integrations
 * (sl_emit_signal), and `visitor_identified` written to
 * the outbox if the key has a webhook now (with none there is nobody to send it to, ever: an event
 * goes to the webhook set when it was emitted or nowhere, so the row would only keep the visitor's
 * address); anything else (suspended, revoked, canceled, out of IDs, pool exhausted) → nothing is
 * identified and the pending row is removed, so a later visit in the period can queue it again.
 * An identification already settled (a second worker after a lease ran out) is left alone.
 * `emitted`: some event for a webhook was written (this one, or the ledger's `child.*`).
 */
create or replace function sl_settle_locked_identification(p_id uuid, p_result jsonb, p_excluded text, p_paid_by uuid)
returns table (outcome text, reload_pool_id uuid, partner_account_id uuid, emitted boolean)
language plpgsql as $$
#variable_conflict use_column
declare
  i identifications;
  r identifications;
  c record;
  v_owner uuid;
  v_partner uuid;
  v_sent boolean := false;
begin
  -- Held already (the caller took it in order); taken here too so a settle is never unlocked.
  select * into i from identifications where id = p_id for update;
  if i.id is null or i.status <> 'pending' then
    return query select 'settled'::text, null::uuid, null::uuid, false;
    return;
  end if;
  r := jsonb_populate_record(null::identifications, p_result);

  if p_excluded is not null then
    update identifications
    set status = 'excluded', excluded_by = p_excluded, identified_at = clock_timestamp(), lease_until = null,
        traffic_type = r.traffic_type, reason = r.reason, confidence = r.confidence, country = r.country,
        domain = case when r.status = 'identified' then r.domain end,
        company_name = case when r.status = 'identified' then r.company_name end
    where id = p_id;
    return query select 'excluded'::text, null::uuid, null::uuid, false;
    return;
  end if;

  if r.status = 'failed' then
    update identifications
    set status = 'failed', identified_at = clock_timestamp(), lease_until = null,
        traffic_type = r.traffic_type, reason = r.reason, confidence = r.confidence, country = r.country
    where id = p_id;
    return query select 'failed'::text, null::uuid, null::uuid, false;
    return;
  end if;

  if p_paid_by is not null then
    select 'consumed'::text as outcome, null::uuid as reload_pool_id, p_paid_by as partner_account_id, false as emitted into c;
  else
    select * into c from sl_consume_id(i.api_key_id);
  end if;
  if c.outcome not in ('consumed', 'not_metered') then
    delete from identifications where id = p_id;
    return query select c.outcome, c.reload_pool_id, c.partner_account_id, c.emitted;
    return;
  end if;

  update identifications
  set status = 'identified', identified_at = clock_timestamp(), lease_until = null,
      identification_type = r.identification_type, traffic_type = r.traffic_type, reason = r.reason,
      confidence = r.confidence, country = r.country, domain = r.domain, company_name = r.company_name,
      company_linkedin_url = r.company_linkedin_url, industry = r.industry, employee_range = r.employee_range,
      employees = r.employees, location = r.location,
      person_linkedin_url = r.person_linkedin_url, person_linkedin_name = r.person_linkedin_name,
      person_linkedin_title = r.person_linkedin_title, person_linkedin_company = r.person_linkedin_company
  where id = p_id;
  select account_id into v_owner from api_keys where id = i.api_key_id;
  v_partner := coalesce(c.partner_account_id, v_owner);
  if sl_event_has_destination('child', v_partner, i.api_key_id) then
    perform sl_emit(v_partner, i.api_key_id, 'visitor_identified', sl_visitor_identified_data(p_id), 'child');
    v_sent := true;
  end if;
  -- The account's alerts and CRM pushes that take this signal (integrations), in this transaction.
  if sl_emit_signal(i.website_id, i.ip, 'visitor_identified') > 0 then
    v_sent := true;
  end if;
  -- Of high intent already when identified: that signal too (later ones come from the fold).
  if exists (select 1 from visitors where website_id = i.website_id and ip = i.ip and high_intent)
     and sl_emit_signal(i.website_id, i.ip, 'high_intent') > 0 then
    v_sent := true;
  end if;
  return query select c.outcome, c.reload_pool_id, v_partner, v_sent or c.emitted;
end
$$;
