/* What `visitor_identified` carries (README: "Visitor identification webhook"). */
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
