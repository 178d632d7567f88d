/*
 * The last step of an erasure (sl_erase_address, sl_erase_person): the webhook events that carried
 * what is erased go with their attempts, and at commit every process drops its copies of the
 * account's stored results (p_account null: every account's; ip/result-cache.ts). Returns the rows
 * removed per table.
 */
create or replace function sl_erase_webhook_events(p_account uuid, p_events uuid[]) returns jsonb
language plpgsql as $$
declare
  v_attempts integer;
  v_events integer;
begin
  delete from webhook_attempts where event_id = any(p_events);
  get diagnostics v_attempts = row_count;
  delete from events where id = any(p_events);
  get diagnostics v_events = row_count;
  perform pg_notify('sl_ip_results_erased', coalesce(p_account::text, ''));
  return jsonb_build_object('webhook_attempts', v_attempts, 'events', v_events);
end
$$;
