-- Helpers the identification path calls once per identified visitor, planned once per session
-- (issue 14).
--
-- A `language sql` function that Postgres cannot inline (a stable function called from PL/pgSQL,
-- or one whose body is a CASE over subqueries) is parsed and planned again on every call: Postgres
-- 15 keeps no plan for it between calls. Each of the three below cost 150-460 µs per call that way
-- (pg_stat_user_functions, on the tracker worker's settle of one visitor), most of it planning a
-- lookup by primary key. The same statements in PL/pgSQL keep their plans for the session. Bodies
-- and answers are unchanged.

create or replace function sl_event_has_destination(p_destination text, p_partner uuid, p_child uuid)
returns boolean
language plpgsql stable as $$
begin
  if p_destination = 'partner' then
    return exists (select 1 from accounts where id = p_partner and partner_webhook_url is not null);
  elsif p_destination = 'account' then
    return exists (select 1 from accounts where id = p_partner and webhook_url is not null);
  end if;
  return exists (select 1 from api_keys where id = p_child and webhook_url is not null);
end
$$;

create or replace function sl_visitor_identified_data(p_id uuid) returns jsonb
language plpgsql stable as $$
begin
  return (
    select jsonb_build_object(
      'child_api_key_id', i.api_key_id,
      'identification_id', i.id,
      'website_id', i.website_id,
      'tracker_site', w.domain,
      'ip', host(i.ip),
      'identification_type', i.identification_type,
      'identified_at', sl_iso(i.identified_at),
      'confidence', i.confidence,
      'company', jsonb_build_object(
        'name', i.company_name, 'domain', i.domain, 'linkedin_url', i.company_linkedin_url, 'industry', i.industry,
        'employee_count', i.employee_range, 'location', i.location, 'country', nullif(i.country, '')),
      'individual', case when i.identification_type = 'individual' then jsonb_build_object(
        'linkedin_url', i.person_linkedin_url, 'linkedin_name', i.person_linkedin_name,
        'linkedin_title', i.person_linkedin_title, 'linkedin_company', i.person_linkedin_company) end,
      'visit', jsonb_build_object(
        'first_seen', sl_iso(v.first_seen), 'last_seen', sl_iso(v.last_seen), 'visit_count', v.visit_count,
        'pages_viewed', v.pages_viewed, 'active_seconds', v.active_ms / 1000, 'referrer', v.referrer,
        'high_intent', v.high_intent))
    from identifications i
    join websites w on w.id = i.website_id
    left join visitors v on v.website_id = i.website_id and v.ip = i.ip
    where i.id = p_id);
end
$$;

create or replace function sl_balance_data(p_child uuid, p_reason text) returns jsonb
language plpgsql stable as $$
begin
  return (
    select jsonb_build_object(
      'child_api_key_id', s.api_key_id,
      'ids_used_this_period', s.ids_used_this_period,
      'monthly_id_quota', s.monthly_id_quota,
      'topup_balance', s.topup_balance,
      'reason', p_reason)
    from child_subscriptions s where s.api_key_id = p_child);
end
$$;
