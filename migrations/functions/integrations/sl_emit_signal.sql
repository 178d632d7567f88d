/*
 * A signal about a visitor of website p_website (`visitor_identified`, `visitor_returned`,
 * `high_intent`, `icp_qualified`, `watched_visit`): one delivery to each active integration of the
 * website's account that takes the signal, in the caller's transaction, unless that integration
 * already sent one about the same company within its cooldown (integration_cooldowns), or another
 * transaction is writing one about it now (a try-lock, never a wait); a digest integration keeps it
 * for the day's digest instead. Returns how many deliveries it wrote. Costs one indexed probe when
 * the account has no integration.
 */
create or replace function sl_emit_signal(p_website uuid, p_ip inet, p_signal text, p_icp jsonb default null) returns integer
language plpgsql as $$
declare
  v_account uuid;
  v_key uuid;
  v_partner uuid;
  v_data jsonb;
  v_company text;
  g record;
  n integer := 0;
begin
  select k.account_id, k.id into v_account, v_key from websites w join api_keys k on k.id = w.api_key_id where w.id = p_website;
  for g in
    select id, cooldown_seconds, digest from integrations
    where account_id = v_account and status = 'active' and p_signal = any(signals) and (website_id is null or website_id = p_website)
    order by id
  loop
    -- What the deliveries carry, read once and only when some integration takes the signal.
    if v_data is null then
      v_data := sl_signal_data(p_website, p_ip, p_icp);
      v_company := left(coalesce(v_data #>> '{visitor,domain}', v_data #>> '{visitor,company_name}', host(p_ip)), 300);
      v_partner := sl_events_owner(v_key);
    end if;
    -- A digest keeps the day's first signal of each company for the day's one message.
    if g.digest then
      insert into integration_digest_items (integration_id, day, company, data)
      values (g.id, (now() at time zone 'UTC')::date, v_company, v_data || jsonb_build_object('signal', p_signal))
      on conflict do nothing;
      continue;
    end if;
    -- Never waits: a transaction emitting for this integration and company right now (a settle batch
    -- or a fold of its own) sends that message, so this one has nothing to add. Waiting on its row
    -- instead could deadlock two batches that meet two companies in opposite orders.
    continue when not pg_try_advisory_xact_lock(hashtextextended(g.id::text || '|' || v_company, 7311995003));
    insert into integration_cooldowns as c (integration_id, company, sent_at) values (g.id, v_company, now())
    on conflict (integration_id, company) do update set sent_at = excluded.sent_at
      where c.sent_at <= now() - g.cooldown_seconds * interval '1 second';
    if found then
      perform sl_emit(v_partner, v_key, p_signal, v_data, 'integration', g.id);
      n := n + 1;
    end if;
  end loop;
  return n;
end
$$;
