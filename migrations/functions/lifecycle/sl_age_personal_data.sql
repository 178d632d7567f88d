/*
 * Personal data over time (docs/operating.md, "Data lifecycle"): one bounded batch of each kind of
 * row that still holds a visitor's address and was last seen before p_before. The row keeps what it
 * counts (visits, pages, engaged time, its company, its lookups) and its address becomes one of
 * 100::/64 that names nobody (sl_anonymous_address); the sessions that only served to count visits
 * go; an `individual` identification loses its person. Raw events, cached lookups, webhook events
 * and idempotency records name addresses only for their retention, which the configuration keeps
 * within this period, so retention removes them before they would age.
 *
 * - visitors: last seen before p_before; their visitor_sessions are deleted first.
 * - identifications: settled, created before p_before, and no visitor of their website with their
 *   address has been seen since (a visitor who keeps coming keeps its history's address until it stops).
 * - api_lookups: last looked up before p_before.
 * - credit_transactions: the address of a debit made before p_before (the ledger line stays).
 *
 * Rows are claimed with SKIP LOCKED, so a sweep never waits for the worker; visitors before
 * identifications, as the lock order in migrations/functions/README.md has it. Returns the rows
 * changed per table; a count below p_limit means that table has nothing left to age.
 */
create or replace function sl_age_personal_data(p_before timestamptz, p_limit integer) returns jsonb
language plpgsql as $$
declare
  v_sites uuid[];
  v_ips inet[];
  v_ids uuid[];
  v_sessions integer;
  v_visitors integer;
  v_identifications integer;
  v_lookups integer;
  v_credits integer;
  v_person record;
begin
  select array_agg(a.website_id order by a.website_id, a.ip), array_agg(a.ip order by a.website_id, a.ip)
  into v_sites, v_ips
  from (
    select website_id, ip from visitors
    where last_seen < p_before and not ip << '100::/64'::inet
    order by last_seen limit p_limit for update skip locked
  ) a;
  delete from visitor_sessions s using unnest(v_sites, v_ips) as a(website_id, ip)
  where s.website_id = a.website_id and s.ip = a.ip;
  get diagnostics v_sessions = row_count;
  update visitors v set ip = sl_anonymous_address()
  from unnest(v_sites, v_ips) as a(website_id, ip)
  where v.website_id = a.website_id and v.ip = a.ip;
  get diagnostics v_visitors = row_count;

  select array_agg(x.id order by x.id) into v_ids
  from (
    select i.id from identifications i
    where i.created_at < p_before and not i.ip << '100::/64'::inet and i.status <> 'pending'
      and not exists (select 1 from visitors v where v.website_id = i.website_id and v.ip = i.ip and v.last_seen >= p_before)
    order by i.created_at limit p_limit for update skip locked
  ) x;
  select * into v_person from sl_forget_person_of_identifications(coalesce(v_ids, '{}'));
  -- Keyed by its address no more: an anonymous address's unit is 100::/64, shared by every aged row.
  update identifications set ip = sl_anonymous_address(), keyed_by_address = true where id = any(v_ids);
  get diagnostics v_identifications = row_count;

  update api_lookups set ip = sl_anonymous_address()
  where id in (
    select id from api_lookups where last_seen < p_before and not ip << '100::/64'::inet
    order by last_seen limit p_limit for update skip locked);
  get diagnostics v_lookups = row_count;

  update credit_transactions set ip = null
  where id in (
    select id from credit_transactions where ip is not null and created_at < p_before
    order by created_at limit p_limit for update skip locked);
  get diagnostics v_credits = row_count;

  return jsonb_build_object(
    'visitors', v_visitors, 'visitor_sessions', v_sessions, 'identifications', v_identifications,
    'individuals', v_person.identifications_changed, 'search_labels', v_person.labels_deleted,
    'api_lookups', v_lookups, 'credit_transactions', v_credits);
end
$$;
