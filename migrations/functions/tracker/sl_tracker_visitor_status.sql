/*
 * For a batch of beacons about to be appended (a JSON array of objects: n, tracking_script_id,
 * page_host, origin_host, ip), per n: `accepted`, whether sl_collect_events would store it (the same
 * tracker, key and host checks), and `candidate`, whether its address is a new visitor the worker
 * would identify: an accepted beacon, of an active key (a suspended one's visitors are never
 * identified), from an address with no identification of the website in the key's current period.
 * Reads only; a beacon the worker has not folded yet leaves its address a candidate.
 */
create or replace function sl_tracker_visitor_status(p_beacons jsonb) returns table (n integer, accepted boolean, candidate boolean)
language plpgsql stable as $$
#variable_conflict use_column
begin
  return query
  select b.n, s.website_id is not null,
         s.website_id is not null and s.key_status = 'active' and not exists (
           select 1 from identifications i
           where i.website_id = s.website_id and i.unit = sl_identification_unit(b.ip) and not i.keyed_by_address
             and i.period_start = sl_identification_period(s.api_key_id))
  from jsonb_to_recordset(p_beacons) as b(n integer, tracking_script_id uuid, page_host text, origin_host text, ip inet)
  left join lateral (
    select w.id as website_id, w.api_key_id, k.status as key_status
    from websites w
    join api_keys k on k.id = w.api_key_id and k.status <> 'revoked'
    join accounts a on a.id = k.account_id
    where w.tracking_script_id = b.tracking_script_id and w.status = 'active'
      and sl_tracker_accepts_host(b.page_host, w.domain, a.allowed_domains)
      and (b.origin_host is null or sl_tracker_accepts_host(b.origin_host, w.domain, a.allowed_domains))
  ) s on true;
end
$$;
