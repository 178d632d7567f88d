-- requires: functions/tracker/sl_identification_unit.sql
-- Visitor identification: one lock order for aggregation and settling, an IPv6 visitor keyed on
-- its /64, and no outbox row for a `visitor_identified` nobody can receive.
--
-- Locking: the lock order is written in migrations/functions/README.md.
--
-- The identification unit: an identification is one per (website, unit, billing period), where the
-- unit is the address for IPv4 and the /64 network for IPv6 (sl_identification_unit). One host, one
-- office LAN or one mobile device rotates its privacy addresses through its /64: keyed on the address,
-- 60 addresses of one /64 used 50 IDs and suspended the child. Visitors still record their full
-- address; the identification keeps the address it was queued with (the one the waterfall looks
-- up), and every visitor of its unit on the website points at it once it is identified.

alter table identifications
  add column unit inet not null generated always as (sl_identification_unit(ip)) stored,
  -- Only an IPv6 identification settled before this migration that shares its /64, website and
  -- period with another: it was keyed on its address and stays out of the unit's uniqueness.
  add column keyed_by_address boolean not null default false,
  add constraint identifications_keyed_by_address_settled check (not keyed_by_address or (status <> 'pending' and family(ip) = 6));

-- Identifications queued before this rule that share a unit, website and period: one is kept (a
-- settled one first). A pending extra is removed (it used nothing; the kept one is its unit's); a
-- settled extra used its ID already and stays, keyed by its address.
with ranked as (
  select id, status, row_number() over (
    partition by website_id, unit, period_start order by status = 'pending', identified_at, created_at, id) as n
  from identifications
)
delete from identifications d using ranked r where d.id = r.id and r.n > 1 and r.status = 'pending';
with ranked as (
  select id, row_number() over (partition by website_id, unit, period_start order by identified_at, created_at, id) as n
  from identifications
)
update identifications d set keyed_by_address = true from ranked r where d.id = r.id and r.n > 1;

alter table identifications drop constraint identifications_website_id_ip_period_start_key;
create unique index identifications_one_per_unit on identifications (website_id, unit, period_start) where not keyed_by_address;
-- What the dropped constraint's index served: finding an identification by its own address.
create index identifications_by_address on identifications (website_id, ip, period_start);
