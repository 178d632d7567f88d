/*
 * Erasure on request of one person, by their canonical profile URL (https://www.linkedin.com/in/<slug>):
 * every identification of the account's websites that names them loses the person and stays the
 * company identification it also is (sl_forget_person_of_identifications); the messages written to
 * them, the connected user they are (with that user's messages and connect links' link to them),
 * the webhook events (with their attempts), the idempotency outcomes and the stored lookup results
 * whose JSON carries the URL are deleted. p_account null: every account (the operator's erasure). One transaction; returns
 * the rows removed or changed per table.
 */
create or replace function sl_erase_person(p_account uuid, p_url text) returns jsonb
language plpgsql as $$
declare
  v_keys uuid[];
  v_sites uuid[];
  v_users uuid[];
  v_events uuid[];
  v_person record;
  v_ids uuid[];
  v_spellings text[];
  v_quoted text[];
  v_out jsonb;
  n integer;
begin
  select array_agg(id) into v_keys from api_keys where p_account is null or account_id = p_account;
  select array_agg(id) into v_sites from websites where api_key_id = any(v_keys);

  -- A provider may have written the profile in another spelling (http, no www, a trailing slash,
  -- capitals): those are matched in their canonical form, and the webhook bodies that carried them
  -- are then found by every spelling met.
  select array_agg(id), array_agg(distinct person_linkedin_url) into v_ids, v_spellings
  from identifications
  where person_linkedin_url is not null and (p_account is null or website_id = any(v_sites))
    and (person_linkedin_url = p_url
         or lower(rtrim(regexp_replace(person_linkedin_url, '^https?://(www\.)?', 'https://www.'), '/')) = p_url);
  v_quoted := array(select distinct to_jsonb(u)::text from unnest(array_append(coalesce(v_spellings, '{}'), p_url)) as u);
  select * into v_person from sl_forget_person_of_identifications(coalesce(v_ids, '{}'));
  v_out := jsonb_build_object('identifications', v_person.identifications_changed, 'visitors', v_person.visitors_relabelled,
                              'search_labels', v_person.labels_deleted);

  select array_agg(id) into v_users from connected_users where (p_account is null or account_id = p_account) and linkedin_url = p_url;
  delete from messages where (p_account is null or account_id = p_account) and (prospect_url = p_url or user_id = any(v_users));
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('messages', n);
  update connect_links set user_id = null where user_id = any(v_users);
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('connect_links', n);
  delete from connected_users where id = any(v_users);
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('connected_users', n);

  delete from idempotent_requests r
  where (p_account is null or r.account_id = p_account) and exists (select 1 from unnest(v_quoted) q where strpos(r.response_body, q) > 0);
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('idempotent_requests', n);

  -- ip-to-best-fit's stored results name decision makers: a result that carries the profile goes
  -- (the next lookup of its address is made afresh).
  delete from ip_cache c
  where (p_account is null or c.account_id = p_account) and exists (select 1 from unnest(v_quoted) q where strpos(c.result::text, q) > 0);
  get diagnostics n = row_count;
  v_out := v_out || jsonb_build_object('ip_cache', n);

  select array_agg(id) into v_events from events e
  where (p_account is null or e.partner_account_id = p_account or e.child_api_key_id = any(v_keys))
    and exists (select 1 from unnest(v_quoted) q where strpos(e.body, q) > 0);
  return v_out || sl_erase_webhook_events(p_account, v_events);
end
$$;
