/*
 * The website a beacon lands on, when its tracker takes it: the active website of tracking id
 * p_tracking_script_id, whose key is not revoked, and whose rule (sl_tracker_accepts_host) takes
 * the page host and, when the browser sent one (p_origin_key not ''), the origin host. No row: the
 * beacon is dropped. Written once for collect's append (sl_collect_events) and its budgets' status
 * read (sl_tracker_visitor_status), which must agree on it. Plain SQL returning a set, so the
 * planner inlines it into each caller as a lateral join.
 */
create or replace function sl_tracker_site(p_tracking_script_id uuid, p_page_host text, p_origin_key text)
returns table (website_id uuid, api_key_id uuid, key_status text)
language sql stable as $$
  select w.id, w.api_key_id, k.status
  from websites w
  join api_keys k on k.id = w.api_key_id and k.status <> 'revoked'
  join accounts a on a.id = k.account_id
  where w.tracking_script_id = p_tracking_script_id and w.status = 'active'
    and sl_tracker_accepts_host(p_page_host, w.domain, a.allowed_domains)
    and (p_origin_key = '' or sl_tracker_accepts_host(p_origin_key, w.domain, a.allowed_domains))
$$;
