/*
 * For a batch of beacons about to be appended (a JSON array of objects: n, tracking_script_id,
 * page_host, origin_host, ip), per n: `accepted`, whether sl_collect_events would store it (the same
 * tracker, key and host checks), and `candidate`, whether its address is a new visitor the worker
 * would identify: an accepted beacon, of an active key (a suspended one's visitors are never
 * identified), from an address with no identification of the website in the key's current period.
 * Reads only; a beacon the worker has not folded yet leaves its address a candidate.
 *
 * The tracker, key, host and period checks are made once per distinct (tracker, page host, origin
 * host) of the batch, by sl_tracker_site as sl_collect_events makes them, and each beacon then costs one probe of
 * identifications_one_per_unit: a batch is mostly one website's beacons, and checking the site per
 * beacon had cost several times the probe.
 */
create or replace function sl_tracker_visitor_status(p_beacons jsonb) returns table (n integer, accepted boolean, candidate boolean)
language plpgsql stable as $$
#variable_conflict use_column
begin
  return query
  with b as (
    select b.n, b.tracking_script_id, b.page_host, coalesce(b.origin_host, '') as origin_key, sl_identification_unit(b.ip) as unit
    from jsonb_to_recordset(p_beacons) as b(n integer, tracking_script_id uuid, page_host text, origin_host text, ip inet)
  ),
  site as materialized (
    select d.tracking_script_id, d.page_host, d.origin_key, t.website_id, t.key_status = 'active' as key_active,
           sl_identification_period(t.api_key_id) as period_start
    from (select distinct tracking_script_id, page_host, origin_key from b) d
    cross join lateral sl_tracker_site(d.tracking_script_id, d.page_host, d.origin_key) t
  )
  select b.n, s.website_id is not null,
         s.website_id is not null and s.key_active and not exists (
           select 1 from identifications i
           where i.website_id = s.website_id and i.unit = b.unit and not i.keyed_by_address and i.period_start = s.period_start)
  from b left join site s on s.tracking_script_id = b.tracking_script_id and s.page_host = b.page_host and s.origin_key = b.origin_key;
end
$$;
