/*
 * Marks the events of p_ids that a `cidr` rule (the visitor's address is in the network) or a `path`
 * rule (the page's path, sl_url_path, matches the pattern) excludes, with that rule's kind, and
 * returns their ids: sl_apply_tracker_events then neither folds them into a visitor nor queues an
 * identification for them. The website's own rules and its account's account-wide ones apply. An
 * event two rules exclude is marked by one (cidr before path). Bots are never marked (they are
 * never queued). With no address or page rule anywhere, it reads nothing else.
 */
create or replace function sl_exclude_tracker_events(p_ids bigint[]) returns bigint[]
language plpgsql as $$
declare
  v_excluded bigint[];
begin
  if not exists (select 1 from traffic_rules where kind in ('cidr', 'path')) then
    return '{}';
  end if;
  with sites as materialized (
    select distinct t.website_id from tracker_events t where t.id = any(p_ids)
  ),
  rules as materialized (
    select s.website_id, r.kind, r.network, r.path_like
    from sites s
    join websites w on w.id = s.website_id
    join api_keys k on k.id = w.api_key_id
    join traffic_rules r on r.website_id = s.website_id or (r.website_id is null and r.account_id = k.account_id)
    where r.kind in ('cidr', 'path')
  ),
  hit as (
    select distinct on (t.id) t.id, t.received_on, r.kind
    from tracker_events t join rules r on r.website_id = t.website_id
    where t.id = any(p_ids) and not t.is_bot
      and ((r.kind = 'cidr' and t.ip <<= r.network) or (r.kind = 'path' and sl_url_path(t.url) like r.path_like))
    order by t.id, r.kind
  ),
  marked as (
    update tracker_events t set excluded_by = h.kind
    from hit h
    where t.id = h.id and t.received_on = h.received_on
    returning t.id
  )
  select array_agg(m.id order by m.id) into v_excluded from marked m;
  return coalesce(v_excluded, '{}');
end
$$;
