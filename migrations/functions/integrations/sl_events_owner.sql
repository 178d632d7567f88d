/*
 * The account a key's outbox events carry (events.partner_account_id): a managed child's partner,
 * else the key's own account — the rule visitor_identified follows (sl_settle_locked_identification),
 * so the partner lists and replays its children's deliveries and the delivery claim finds them.
 */
create or replace function sl_events_owner(p_key uuid) returns uuid
language sql stable as $$
  select coalesce(m.account_id, k.account_id)
  from api_keys k left join api_keys m on m.id = k.parent_api_key_id
  where k.id = p_key
$$;
