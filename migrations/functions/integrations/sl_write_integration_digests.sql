/*
 * Each digest integration's day that has ended (UTC) becomes one delivery, `digest`, carrying that
 * day's signals (one per company, oldest first), and its items go. Run by the delivery sweep each
 * minute: with nothing due it is one indexed probe. Replicas running it at once share the days: an
 * item is deleted by one of them, and a day that comes back empty writes nothing. A paused or removed
 * integration's days are dropped unsent (as its deliveries would be). Returns how many it wrote.
 */
create or replace function sl_write_integration_digests(p_now timestamptz default null) returns integer
language plpgsql as $$
declare
  v_today date := (coalesce(p_now, now()) at time zone 'UTC')::date;
  d record;
  v_items jsonb;
  v_key uuid;
  v_partner uuid;
  n integer := 0;
begin
  for d in
    select distinct i.integration_id, i.day from integration_digest_items i where i.day < v_today order by 1, 2 limit 100
  loop
    with gone as (
      delete from integration_digest_items where integration_id = d.integration_id and day = d.day returning data, at
    )
    select jsonb_agg(data order by at) into v_items from gone;
    continue when v_items is null
      or not exists (select 1 from integrations where id = d.integration_id and status = 'active');
    select w.api_key_id into v_key from websites w where w.id = (v_items -> 0 ->> 'website_id')::uuid;
    v_partner := coalesce(sl_events_owner(v_key), (select account_id from integrations where id = d.integration_id));
    perform sl_emit(v_partner, v_key, 'digest', jsonb_build_object('day', d.day, 'signals', v_items), 'integration', d.integration_id);
    n := n + 1;
  end loop;
  return n;
end
$$;
