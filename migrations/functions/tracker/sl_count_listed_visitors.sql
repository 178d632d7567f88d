/*
 * Keeps list-visitors' counts (migration 0034) as identified visitors change: each statement on
 * visitors adds, per (website, hour of last_seen), the identified rows it added minus those it
 * removed, and per (website, hour of the older last_seen of the pair) the same for the pairs those
 * rows make with a lookup of their address by the website's key; then folds those
 * hours (sl_add_listing_counts counts the pairs by the hour and by the minute).
 *
 * A pair joins a row of each table, so a visitor's change and a lookup's change to one pair in two
 * transactions must each see the other's result: this statement's trigger takes a shared advisory
 * lock on each website's key before reading the lookups, and the lookups' trigger
 * (sl_count_listed_lookups) an exclusive one before reading the visitors. Whichever counts second
 * sees what the first wrote; writers of visitors never wait for each other. An identified visitor
 * is only made by an update (a visitor is inserted unidentified), which the lookups' trigger waits
 * for through the lock; an insert of an identified visitor is counted, but a lookup recorded for its
 * address in the same instant may miss the pair.
 */
create or replace function sl_count_listed_visitors() returns trigger
language plpgsql as $$
declare
  v_sites uuid[] := '{}';
  v_ips inet[] := '{}';
  v_seen timestamptz[] := '{}';
  v_signs integer[] := '{}';
begin
  -- Transition tables exist only for the event that fired: each is read in its own branch.
  if tg_op in ('UPDATE', 'DELETE') then
    select coalesce(array_agg(o.website_id), '{}'), coalesce(array_agg(o.ip), '{}'), coalesce(array_agg(o.last_seen), '{}'),
           coalesce(array_agg(-1), '{}')
      into v_sites, v_ips, v_seen, v_signs
      from old_rows o where o.identification_id is not null;
  end if;
  if tg_op in ('UPDATE', 'INSERT') then
    select v_sites || coalesce(array_agg(n.website_id), '{}'), v_ips || coalesce(array_agg(n.ip), '{}'),
           v_seen || coalesce(array_agg(n.last_seen), '{}'), v_signs || coalesce(array_agg(1), '{}')
      into v_sites, v_ips, v_seen, v_signs
      from new_rows n where n.identification_id is not null;
  end if;
  if cardinality(v_sites) = 0 then
    return null;
  end if;
  -- The keys in one order, so two statements' locks never wait in a circle.
  perform pg_advisory_xact_lock_shared(hashtextextended(k.api_key_id::text, 34))
  from (select distinct w.api_key_id from websites w where w.id = any(v_sites) order by 1) k;
  -- One call adds this statement's deltas and folds their hours (sl_add_listing_counts).
  perform (
    with c as (
      select * from unnest(v_sites, v_ips, v_seen, v_signs) as c (website_id, ip, last_seen, d)
    ), pairs as (
      select c.website_id, least(c.last_seen, a.last_seen) as older, c.d
      from c join websites w on w.id = c.website_id
      -- The website's key's lookup of the address, probed by the unique key (a lateral, so the plan,
      -- made without knowing the statement is small, never hashes the whole table).
      cross join lateral (select a.last_seen from api_lookups a where a.api_key_id = w.api_key_id and a.ip = c.ip limit 1) a
    ), deltas as (
      select c.website_id as scope_id, 'visitors' as kind, date_trunc('hour', c.last_seen, 'UTC') as hour, sum(c.d)::integer as n
      from c group by 1, 3
    )
    select sl_add_listing_counts(d.scopes, d.kinds, d.hours, d.ns, p.sites, p.older, p.ds)
    from (select array_agg(scope_id) as scopes, array_agg(kind) as kinds, array_agg(hour) as hours, array_agg(n) as ns from deltas) d,
         (select array_agg(website_id) as sites, array_agg(older) as older, array_agg(d) as ds from pairs) p
  );
  return null;
end
$$;

create trigger visitors_listing_counts_insert
  after insert on visitors referencing new table as new_rows
  for each statement execute function sl_count_listed_visitors();
create trigger visitors_listing_counts_update
  after update on visitors referencing old table as old_rows new table as new_rows
  for each statement execute function sl_count_listed_visitors();
create trigger visitors_listing_counts_delete
  after delete on visitors referencing old table as old_rows
  for each statement execute function sl_count_listed_visitors();
