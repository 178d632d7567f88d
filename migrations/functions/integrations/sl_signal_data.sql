/*
 * What a signal's delivery carries (the `data` of its envelope): the website, the visitor's address
 * (so an erasure of it finds the delivery, as it finds visitor_identified's), the visitor with its
 * company and its latest pages, and the ICP the signal is about, if any. The sender turns it into
 * each destination's message (packages/core/src/integrations).
 */
create or replace function sl_signal_data(p_website uuid, p_ip inet, p_icp jsonb) returns jsonb
language plpgsql stable as $$
begin
  return (
    select jsonb_build_object(
      'website_id', w.id,
      'tracker_site', w.domain,
      'ip', host(p_ip),
      'visitor', jsonb_build_object(
        'website_id', w.id, 'ip', host(p_ip), 'identification_id', i.id,
        'company_name', i.company_name, 'domain', i.domain, 'country', nullif(i.country, ''),
        'first_seen', sl_iso(v.first_seen), 'last_seen', sl_iso(v.last_seen),
        'visit_count', coalesce(v.visit_count, 0), 'pages_viewed', coalesce(v.pages_viewed, 0),
        'active_seconds', coalesce(v.active_ms, 0) / 1000, 'high_intent', coalesce(v.high_intent, false),
        -- The latest session's pages (its last half hour), newest first: a bounded read of raw events.
        'pages', coalesce((
          select jsonb_agg(p.url) from (
            select t.url, max(t.received_at) as at from tracker_events t
            where t.website_id = w.id and t.ip = p_ip and t.kind = 'pageview'
              and t.received_at >= coalesce(v.last_seen, now()) - interval '30 minutes'
            group by t.url order by at desc limit 5
          ) p), '[]'::jsonb)),
      'icp', p_icp)
    from websites w
    left join visitors v on v.website_id = w.id and v.ip = p_ip
    left join lateral (
      select x.id, x.company_name, x.domain, x.country from identifications x
      where x.website_id = w.id and x.unit = sl_identification_unit(p_ip) and x.status = 'identified'
      order by x.period_start desc limit 1
    ) i on true
    where w.id = p_website);
end
$$;
