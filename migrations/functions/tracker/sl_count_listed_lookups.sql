/*
 * Keeps list-visitors' counts (migration 0034) as api_lookups change: each statement adds, per (key,
 * hour of last_seen), the rows it added minus those it removed, and per (website, hour of the older
 * last_seen of the pair) the same for the pairs those rows make with an identified visitor of the
 * address on a website of the key; then folds those hours
 * (sl_add_listing_counts counts the pairs by the hour and by the minute).
 *
 * Before reading the visitors it takes an exclusive advisory lock on each key, which waits for every
 * visitors statement of the key's websites still uncommitted (sl_count_listed_visitors holds the
 * shared one until its commit) and makes the later ones wait for this commit: a pair changed on both
 * sides at once is counted from both results, never from two stale halves.
 */
create or replace function sl_count_listed_lookups() returns trigger
language plpgsql as $$
declare
  v_keys uuid[] := '{}';
  v_ips inet[] := '{}';
  v_seen timestamptz[] := '{}';
  v_signs integer[] := '{}';
begin
  if tg_op in ('UPDATE', 'DELETE') then
    select coalesce(array_agg(o.api_key_id), '{}'), coalesce(array_agg(o.ip), '{}'), coalesce(array_agg(o.last_seen), '{}'),
           coalesce(array_agg(-1), '{}')
      into v_keys, v_ips, v_seen, v_signs
      from old_rows o;
  end if;
  if tg_op in ('UPDATE', 'INSERT') then
    select v_keys || coalesce(array_agg(n.api_key_id), '{}'), v_ips || coalesce(array_agg(n.ip), '{}'),
           v_seen || coalesce(array_agg(n.last_seen), '{}'), v_signs || coalesce(array_agg(1), '{}')
      into v_keys, v_ips, v_seen, v_signs
      from new_rows n;
  end if;
  if cardinality(v_keys) = 0 then
    return null;
  end if;
  -- Only a key with a website can make a pair; the keys in one order, as the visitors' trigger.
  perform pg_advisory_xact_lock(hashtextextended(k.api_key_id::text, 34))
  from (select distinct w.api_key_id from websites w where w.api_key_id = any(v_keys) order by 1) k;
  -- One call adds this statement's deltas and folds their hours (sl_add_listing_counts).
  perform (
    with c as (
      select * from unnest(v_keys, v_ips, v_seen, v_signs) as c (api_key_id, ip, last_seen, d)
    ), pairs as (
      select v.website_id, least(c.last_seen, v.last_seen) as older, c.d
      from c
      -- The address's identified visitors on the key's websites, probed by address (a lateral, so the
      -- plan never hashes the whole table).
      cross join lateral (
        select v.website_id, v.last_seen from visitors v join websites w on w.id = v.website_id
        where v.ip = c.ip and v.identification_id is not null and w.api_key_id = c.api_key_id
      ) v
    ), deltas as (
      select c.api_key_id as scope_id, 'lookups' as kind, date_trunc('hour', c.last_seen, 'UTC') as hour, sum(c.d)::integer as n
      from c group by 1, 3
    )
    select sl_add_listing_counts(d.scopes, d.kinds, d.hours, d.ns, p.sites, p.older, p.ds)
    from (select array_agg(scope_id) as scopes, array_agg(kind) as kinds, array_agg(hour) as hours, array_agg(n) as ns from deltas) d,
         (select array_agg(website_id) as sites, array_agg(older) as older, array_agg(d) as ds from pairs) p
  );
  return null;
end
$$;

create trigger api_lookups_listing_counts_insert
  after insert on api_lookups referencing new table as new_rows
  for each statement execute function sl_count_listed_lookups();
create trigger api_lookups_listing_counts_update
  after update on api_lookups referencing old table as old_rows new table as new_rows
  for each statement execute function sl_count_listed_lookups();
create trigger api_lookups_listing_counts_delete
  after delete on api_lookups referencing old table as old_rows
  for each statement execute function sl_count_listed_lookups();
