/*
 * Erasure on request of one address (docs/operating.md, "Data-protection requests"): every row the
 * account holds that names p_ip is deleted, or, where the row is a record kept for another reason (a
 * ledger line), loses the address. p_account null: every account (the operator's erasure). One
 * transaction, since the caller's statement is one; returns the rows removed per table.
 *
 * What the account holds: the websites of its keys (raw events and their place on the worker's
 * queue, sessions, visitors, identifications and their ICP scores), its keys' lookups, its cached
 * lookups, the address of its debits, and the webhook events (with their attempts) sent for its keys
 * that carry the address. Tables are taken in the lock order of migrations/functions/README.md
 * (sessions, visitors, identifications, ip_cache) and the ledger after them.
 */
create or replace function sl_erase_address(p_account uuid, p_ip inet) returns jsonb
language plpgsql as $$
declare
  v_keys uuid[];
  v_sites uuid[];
  v_identifications uuid[];
  v_events uuid[];
  v_out jsonb := '{}';
  n integer;
begin
  select array_agg(id) into v_keys from api_keys where p_account is null or account_id = p_account;
  select array_agg(id) into v_sites from websites where api_key_id = any(v_keys);

  with gone as (
    delete from tracker_events where (p_account is null or website_id = any(v_sites)) and ip = p_ip returning id
  ),
  unqueued as (
    delete from tracker_queue q using gone g where q.event_id = g.id returning 1
  )
  select v_out || jsonb_build_object('tracker_events', (select count(*) from gone), 'tracker_queue', (select count(*) from unqueued))
  into v_out;

  delete from visitor_sessions where (p_account is null or website_id = any(v_sites)) and ip = p_ip;
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('visitor_sessions', n);
  delete from visitors where (p_account is null or website_id = any(v_sites)) and ip = p_ip;
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('visitors', n);

  select array_agg(id order by id) into v_identifications from (
    select id from identifications where (p_account is null or website_id = any(v_sites)) and ip = p_ip order by id for update
  ) i;
  delete from icp_scores where identification_id = any(v_identifications);
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('icp_scores', n);
  -- Visitors of the address's IPv6 /64 that shared the identification keep their own rows and lose the link.
  delete from identifications where id = any(v_identifications);
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('identifications', n);

  delete from ip_cache where (p_account is null or account_id = p_account) and ip = p_ip;
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('ip_cache', n);
  delete from api_lookups where (p_account is null or api_key_id = any(v_keys)) and ip = p_ip;
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('api_lookups', n);
  update credit_transactions set ip = null where (p_account is null or account_id = p_account) and ip = p_ip;
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('credit_transactions', n);

  -- The visitor's signals kept for a digest, then every event that carried the address: a signal
  -- (visitor_identified and the integrations' others) or a digest holding one.
  delete from integration_digest_items d
  where (p_account is null or d.integration_id in (select g.id from integrations g where g.account_id = p_account))
    and d.data ->> 'ip' = host(p_ip);
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('integration_digest_items', n);
  select array_agg(id) into v_events from events e
  where (p_account is null or e.partner_account_id = p_account or e.child_api_key_id = any(v_keys))
    and ((e.event in ('visitor_identified', 'visitor_returned', 'high_intent', 'icp_qualified', 'watched_visit')
          and e.body::jsonb #>> '{data,ip}' = host(p_ip))
         or (e.event = 'digest' and e.body::jsonb -> 'data' -> 'signals' @> jsonb_build_array(jsonb_build_object('ip', host(p_ip)))));
  return v_out || sl_erase_webhook_events(p_account, v_events);
end
$$;
